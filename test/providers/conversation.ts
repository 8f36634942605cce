// Test fixture: in-epoch request sequences shaped like the session runtime's. At each
// Safe Provider-Turn Boundary the new user input or the settled tool results come first,
// then at most one combined Mid-Conversation System Message; the model's reply is
// appended before the next boundary.

import type { ProviderRequest, RequestMessage, ToolCall } from "../../core/providers/index.ts";

/** One boundary of a scripted session. */
export interface ScriptedStep {
  /** User input for this boundary (ignored when tool results are due). */
  readonly input: string;
  /** A Mid-Conversation System Message admitted at this boundary, if any. */
  readonly update?: string;
  /** The reply's text. */
  readonly reply: string;
  /** How many tool calls the reply makes. */
  readonly toolCalls: number;
}

/** The requests a session following `steps` sends, one per step, all in one Context Epoch. */
export function inEpochRequests(
  steps: readonly ScriptedStep[],
  options: { model?: string; system?: readonly string[]; startWithSummary?: string } = {},
): ProviderRequest[] {
  const history: RequestMessage[] = [];
  if (options.startWithSummary !== undefined) history.push({ role: "summary", text: options.startWithSummary });
  const requests: ProviderRequest[] = [];
  let dueCalls: readonly ToolCall[] = [];
  steps.forEach((step, index) => {
    if (dueCalls.length > 0) {
      for (const call of dueCalls)
        history.push({ role: "tool", callId: call.id, name: call.name, result: `result of ${call.id}` });
    } else {
      history.push({ role: "user", text: step.input });
    }
    if (step.update !== undefined) history.push({ role: "system-update", text: step.update });
    requests.push({
      provider: "test",
      model: options.model ?? "test-model",
      system: options.system ?? ["You are a careful agent.", "date: 2026-01-01\ncwd: /work"],
      messages: [...history],
    });
    dueCalls = Array.from({ length: step.toolCalls }, (_, call) => ({
      id: `call_${index}_${call}`,
      name: call % 2 === 0 ? "read_file" : "grep",
      input: { path: `src/${index}.ts`, line: call },
    }));
    history.push(
      dueCalls.length > 0
        ? { role: "assistant", text: step.reply, toolCalls: dueCalls }
        : { role: "assistant", text: step.reply },
    );
  });
  return requests;
}

/** A fixed script: plain turns, tool round-trips (single and parallel), updates with XML-special text. */
export const scriptedSteps: readonly ScriptedStep[] = [
  { input: "Fix the failing test.", reply: "Let me look.", toolCalls: 1 },
  { input: "", update: "cwd: /work/app", reply: "", toolCalls: 2 },
  { input: "", reply: "Found it: a < b & c.", toolCalls: 0 },
  { input: "Go ahead.", update: 'date: 2026-01-02 <tomorrow> & "later"', reply: "Done.", toolCalls: 0 },
  { input: "Run it again.", reply: "Running.", toolCalls: 1 },
  { input: "", update: "branch: main", reply: "All green.", toolCalls: 0 },
  { input: "Thanks.", reply: "You're welcome.", toolCalls: 0 },
];
