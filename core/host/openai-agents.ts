// Owns `contextInputFilter`: the context engine as the OpenAI Agents SDK's
// `RunConfig.callModelInputFilter` (decision 102). Before each model call of a run it
// runs the session's boundary: the instructions become the agent's instructions and the
// Baseline, and each admitted Mid-Conversation System Message goes into the input after
// the item it was admitted after, as a system message where the model takes one, else as
// `<system-update>` text in a user message. The SDK is not imported: its types are matched
// by shape, so `@openai/agents` stays an optional peer.

import { SettingInvalid } from "../base/errors.ts";
import { openAICapabilities, openAIModels } from "../providers/openai-lowering.ts";
import { wrapSystemUpdate } from "../providers/wrapped-text.ts";
import type { ContextEngine } from "./engine.ts";

/** What the filter reads of the model call (the SDK's `ModelInputData`). */
export interface ModelInputLike {
  readonly input: readonly unknown[];
  readonly instructions?: string;
}

/** The filter's argument (the SDK's `CallModelInputFilterArgs`), as read here. */
export interface InputFilterArgsLike {
  readonly modelData: ModelInputLike;
  readonly agent: { readonly model?: unknown };
  readonly context: unknown;
}

/** The session of a run: from the run's context (`run(agent, input, { context })`). */
export interface AgentSession {
  readonly sessionId: string;
  /** The folder the session works in; default the process's working folder. */
  readonly location?: string;
}

/** Options of `contextInputFilter`. */
export interface ContextInputFilterOptions {
  /** The session of a call; default `context["context-host"]` of the run's context. A call of no session passes through. */
  readonly session?: (args: InputFilterArgsLike) => AgentSession | undefined;
  /** The model id when the agent names none as a string (default `"gpt-5"`). */
  readonly model?: string;
  /** Whether the model takes system messages inside the input; default by `openAIModels`. */
  readonly nativeSystemMessages?: (model: string) => boolean;
}

function defaultSession(args: InputFilterArgsLike): AgentSession | undefined {
  const context = args.context as Record<string, unknown> | undefined;
  const session = context?.["context-host"];
  if (session === undefined) return undefined;
  const { sessionId, location } = (session ?? {}) as { sessionId?: unknown; location?: unknown };
  if (typeof sessionId !== "string" || sessionId === "" || (location !== undefined && typeof location !== "string")) {
    throw new SettingInvalid({
      setting: 'run context["context-host"]',
      reason: `must be { sessionId: string, location?: string }, got ${JSON.stringify(session)}`,
    });
  }
  return { sessionId, ...(location === undefined ? {} : { location }) };
}

/** The context engine as the OpenAI Agents SDK's `callModelInputFilter`. */
export function contextInputFilter(
  engine: ContextEngine,
  options: ContextInputFilterOptions = {},
): <Args extends InputFilterArgsLike>(args: Args) => Promise<Args["modelData"]> {
  const sessionOf = options.session ?? defaultSession;
  const native =
    options.nativeSystemMessages ?? ((model: string) => openAICapabilities(model, openAIModels).systemUpdateRole !== "wrapped");
  return async (args) => {
    const session = sessionOf(args);
    if (session === undefined) return args.modelData;
    const model = typeof args.agent.model === "string" && args.agent.model !== "" ? args.agent.model : (options.model ?? "gpt-5");
    const { input, instructions } = args.modelData;
    const { baseline, updates } = await engine.boundary(session.sessionId, {
      location: session.location ?? process.cwd(),
      provider: "openai",
      model,
      messages: [instructions ?? null, ...input],
    });
    const isNative = native(model);
    const rebuilt: unknown[] = [];
    let next = 0;
    const admit = (position: number) => {
      for (; next < updates.length && (updates[next] as { position: number }).position <= position; next++) {
        const text = (updates[next] as { text: string }).text;
        rebuilt.push(isNative ? { role: "system", content: text } : { role: "user", content: wrapSystemUpdate(text) });
      }
    };
    // Position 1 is after the instructions, which the engine counted as the first message.
    admit(1);
    input.forEach((item, index) => {
      rebuilt.push(item);
      admit(index + 2);
    });
    return {
      ...args.modelData,
      instructions: instructions === undefined || instructions === "" ? baseline : `${instructions}\n\n${baseline}`,
      input: rebuilt,
    };
  };
}
