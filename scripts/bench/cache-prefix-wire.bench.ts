// Bench `cache-prefix-wire`: the scripted session of issue 4 (scripted-session.ts, the
// one `cache-prefix` measures) — BENCH_STEPS boundaries [200] through `createHost` with
// seeded Context Source changes, user turns of varying length and `read_file` tool
// round-trips — recorded as the runtime's ProviderRequests, then sent through each
// adapter to a local HTTP server on 127.0.0.1 that records the raw request bodies. Both
// adapters declare the tools the host offers (`read`, `read_file`).
//
// Metrics `anthropic-extension-share-pct` and `openai-extension-share-pct`: the share of
// in-epoch requests (every request after the first of its Context Epoch) whose recorded
// body extends the previous one as a prompt-cache prefix — everything before `messages`
// byte-identical, and the previous serialized messages the start of the next
// (Anthropic: with the one moving cache breakpoint removed). See
// core/providers/prefix-extension.ts. Goal 100.
//
// Baseline, measured in the same run through the same adapters and server over the
// same recorded requests: the naive way to keep the model's context current without
// mid-conversation messages — fold every update admitted so far in the epoch into the
// system instructions (Baseline + updates, re-sent as the system prompt) and leave them
// out of the history. Each update rewrites the start of the prompt, so the request after
// it cannot extend the previous one.
//
// The Anthropic session runs on `claude-opus-4-8` (native `role: "system"` messages where
// placement allows); the OpenAI-compatible one on a local-server model (wrapped fallback).
//
// Environment (defaults in brackets; BENCH_QUICK=1 makes the defaults [40]): BENCH_STEPS,
// BENCH_SEED [1], BENCH_COMPACT [0] (1: compact halfway, a second epoch), BENCH_TMPDIR
// where the session's temp data folder goes [the OS's].

import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import {
  anthropicProvider,
  extendsAnthropicPrefix,
  extendsOpenAIPrefix,
  openAICompatibleProvider,
  type Provider,
  type ProviderRequest,
} from "../../core/providers/index.ts";
import { emit, envInt } from "./measure.ts";
import { runScriptedSession } from "./scripted-session.ts";

const bench = "cache-prefix-wire";
const isQuick = process.env.BENCH_QUICK === "1";
const steps = envInt("BENCH_STEPS", isQuick ? 40 : 200);
const seed = envInt("BENCH_SEED", 1);
if (steps < 4) throw new RangeError("BENCH_STEPS must be at least 4");
const compactAt = envInt("BENCH_COMPACT", 0) === 1 ? Math.floor(steps / 2) : -1;

const session = await runScriptedSession({ steps, seed, compactAt, tmpDir: process.env.BENCH_TMPDIR });
const epochs = session.turns.map((turn) => turn.epoch);
// The Anthropic API rejects tool use in the history of a request that declares no such tool.
const declared = new Set(session.tools.map((tool) => tool.name));
for (const { request } of session.turns)
  for (const message of request.messages) {
    const used =
      message.role === "assistant"
        ? (message.toolCalls ?? []).map((call) => call.name)
        : message.role === "tool"
          ? [message.name]
          : [];
    for (const name of used) if (!declared.has(name)) throw new Error(`the session uses the undeclared tool ${name}`);
  }

/** The session's requests as the host sent them, on `model`. */
const sessionOn = (model: string): ProviderRequest[] => session.turns.map(({ request }) => ({ ...request, model }));

/** The naive baseline: every update so far in the epoch folded into the system instructions, none in the history. */
function foldUpdatesIntoSystem(request: ProviderRequest): ProviderRequest {
  const updates = request.messages.flatMap((message) => (message.role === "system-update" ? [message.text] : []));
  const baseline = request.system.at(-1) ?? "";
  return {
    ...request,
    system: [...request.system.slice(0, -1), [baseline, ...updates].join("\n\n")],
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

/** Percentage of in-epoch recorded bodies (after the first of each epoch) that extend the one before. */
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
  let inEpoch = 0;
  let extensions = 0;
  for (let i = 1; i < parsed.length; i++) {
    if (epochs[i] !== epochs[i - 1]) continue;
    inEpoch++;
    if (extendsPrefix(parsed[i - 1]!, parsed[i]!)) extensions++;
  }
  return (100 * extensions) / inEpoch;
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
  const requests = sessionOn(model);
  const sent = await sendAll(provider, requests, bodies);
  const naive = await sendAll(provider, requests.map(foldUpdatesIntoSystem), bodies);
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
  const anthropic = anthropicProvider({ apiKey: "bench", baseURL: server.url, maxRetries: 0, tools: session.tools });
  await emitExtensionShare("anthropic-extension-share-pct", anthropic, "claude-opus-4-8", extendsAnthropicPrefix, server.bodies);
  const openAI = openAICompatibleProvider({ apiKey: "", baseURL: `${server.url}/v1`, maxRetries: 0, tools: session.tools });
  await emitExtensionShare("openai-extension-share-pct", openAI, "local-model", extendsOpenAIPrefix, server.bodies);
} finally {
  await server.close();
}
