// Bench `cache-prefix-wire`: a scripted in-epoch session of BENCH_STEPS provider turns
// [200] — user turns, assistant replies, tool call round-trips (single and parallel) and
// a Mid-Conversation System Message every third boundary — sent through each adapter to
// a local HTTP server on 127.0.0.1 that records the raw request bodies.
//
// Metrics `anthropic-extension-share-pct` and `openai-extension-share-pct`: the share of
// in-epoch requests (every request after the first) whose recorded body extends the
// previous one as a prompt-cache prefix — everything before `messages` byte-identical,
// and the previous serialized messages the start of the next (Anthropic: with the one
// moving cache breakpoint removed). See core/providers/prefix-extension.ts. Goal 100.
//
// Baseline, measured in the same run through the same adapters and server: the naive
// way to keep the model's context current without mid-conversation messages — fold
// every update admitted so far into the system instructions (Baseline + updates, re-sent
// as the system prompt) and leave them out of the history. Each update rewrites the start
// of the prompt, so the request after it cannot extend the previous one.
//
// The Anthropic session runs on `claude-opus-4-8` (native `role: "system"` messages where
// placement allows); the OpenAI-compatible one on a local-server model (wrapped fallback).

import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import {
  anthropicProvider,
  extendsAnthropicPrefix,
  extendsOpenAIPrefix,
  openAICompatibleProvider,
  type Provider,
  type ProviderRequest,
  type RequestMessage,
  type ToolCall,
} from "../../core/providers/index.ts";
import { emit, envInt } from "./measure.ts";

const bench = "cache-prefix-wire";
const steps = envInt("BENCH_STEPS", 200);
if (steps < 2) throw new RangeError("BENCH_STEPS must be at least 2");

const systemPrompt = "You are a coding agent. Work carefully and explain briefly.";
const baseline = ["date: 2026-01-01", "cwd: /work/app", "branch: main", "instructions: AGENTS.md (42 lines)"].join("\n");

/** The requests of the scripted session, one per boundary, all in one Context Epoch. */
function scriptedSession(model: string): ProviderRequest[] {
  const history: RequestMessage[] = [];
  const requests: ProviderRequest[] = [];
  let dueCalls: ToolCall[] = [];
  for (let step = 0; step < steps; step++) {
    if (dueCalls.length > 0) {
      for (const call of dueCalls)
        history.push({ role: "tool", callId: call.id, name: call.name, result: `contents of ${call.id}` });
    } else {
      history.push({ role: "user", text: `Step ${step}: please continue with the next part of the task.` });
    }
    if (step % 3 === 2)
      history.push({
        role: "system-update",
        text: `date: 2026-01-${String(1 + (Math.floor(step / 3) % 28)).padStart(2, "0")} <local>`,
      });
    requests.push({ provider: "bench", model, system: [systemPrompt, baseline], messages: [...history] });
    const callCount = step % 5 === 0 ? 1 : step % 7 === 0 ? 2 : 0;
    dueCalls = Array.from({ length: callCount }, (_, i) => ({
      id: `call_${step}_${i}`,
      name: "read_file",
      input: { path: `src/${step}-${i}.ts` },
    }));
    history.push(
      callCount > 0
        ? { role: "assistant", text: "Let me read that.", toolCalls: dueCalls }
        : { role: "assistant", text: `Done with step ${step}.` },
    );
  }
  return requests;
}

/** The naive baseline: every update so far folded into the system instructions, none in the history. */
function foldUpdatesIntoSystem(request: ProviderRequest): ProviderRequest {
  const updates = request.messages.flatMap((message) => (message.role === "system-update" ? [message.text] : []));
  return {
    ...request,
    system: [systemPrompt, [baseline, ...updates].join("\n")],
    messages: request.messages.filter((message) => message.role !== "system-update"),
  };
}

const anthropicStream = [
  { type: "message_start", message: { id: "msg", type: "message", role: "assistant", content: [], model: "bench" } },
  { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
  { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "ok" } },
  { type: "content_block_stop", index: 0 },
  { type: "message_stop" },
]
  .map((event) => `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`)
  .join("");
const openAIStream = `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: "ok" }, finish_reason: "stop" }] })}\n\ndata: [DONE]\n\n`;

/** A local server recording raw bodies; answers each API's streaming format by path. */
async function startRecordingServer() {
  const bodies: string[] = [];
  const server = createServer((request, response) => {
    const parts: Buffer[] = [];
    request.on("data", (part: Buffer) => parts.push(part));
    request.on("end", () => {
      bodies.push(Buffer.concat(parts).toString("utf8"));
      response.writeHead(200, { "content-type": "text/event-stream" });
      response.end(request.url === "/v1/messages" ? anthropicStream : openAIStream);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    bodies,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Sends the requests in order and returns the recorded body of each. */
async function sendAll(provider: Provider, requests: readonly ProviderRequest[], bodies: string[]): Promise<string[]> {
  const start = bodies.length;
  for (const request of requests) await provider.send(request);
  return bodies.slice(start);
}

/** Percentage of recorded bodies (after the first) that extend the one before. */
function extensionSharePct<Body extends { messages: unknown }>(
  bodies: readonly string[],
  extendsPrefix: (previous: Body, next: Body) => boolean,
): number {
  const parsed = bodies.map((body) => {
    const json = JSON.parse(body) as Body;
    // Comparing re-serialized messages is comparing the recorded bytes only if they are the same bytes.
    if (!body.includes(`"messages":${JSON.stringify(json.messages)}`))
      throw new Error("recorded messages are not canonical JSON");
    return json;
  });
  let extensions = 0;
  for (let i = 1; i < parsed.length; i++) if (extendsPrefix(parsed[i - 1]!, parsed[i]!)) extensions++;
  return (100 * extensions) / (parsed.length - 1);
}

/**
 * Sends the scripted session on `model` through `provider`, then its naive baseline, and
 * prints `metric`: the extension share of the one against the other.
 */
async function emitExtensionShare<Body extends { messages: unknown }>(
  metric: string,
  provider: Provider,
  model: string,
  extendsPrefix: (previous: Body, next: Body) => boolean,
  bodies: string[],
): Promise<void> {
  const session = scriptedSession(model);
  const sent = await sendAll(provider, session, bodies);
  const naive = await sendAll(provider, session.map(foldUpdatesIntoSystem), bodies);
  emit({
    bench,
    metric,
    value: extensionSharePct(sent, extendsPrefix),
    unit: "%",
    baseline: extensionSharePct(naive, extendsPrefix),
  });
}

const server = await startRecordingServer();
try {
  const anthropic = anthropicProvider({ apiKey: "bench", baseURL: server.url, maxRetries: 0 });
  await emitExtensionShare("anthropic-extension-share-pct", anthropic, "claude-opus-4-8", extendsAnthropicPrefix, server.bodies);
  const openAI = openAICompatibleProvider({ apiKey: "", baseURL: `${server.url}/v1`, maxRetries: 0 });
  await emitExtensionShare("openai-extension-share-pct", openAI, "local-model", extendsOpenAIPrefix, server.bodies);
} finally {
  await server.close();
}
