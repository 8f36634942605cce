// contextMiddleware with the real AI SDK (`ai`, `@ai-sdk/anthropic`, `@ai-sdk/openai`)
// pointed at a local server on 127.0.0.1 that answers as each API documents (JSON and
// SSE). The assertions are on the HTTP bodies the SDKs sent: within an epoch every request
// extends the previous one byte for byte, and each update appears once, right after the
// newest user or tool message it was admitted after.

import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createAnthropic } from "@ai-sdk/anthropic";
import { createOpenAI } from "@ai-sdk/openai";
import { generateText, jsonSchema, type ModelMessage, stepCountIs, streamText, ToolLoopAgent, tool, wrapLanguageModel } from "ai";
import { expect } from "chai";
import { contextMiddleware } from "../../core/ai-sdk.ts";
import { type ContextEngine, type ContextEngineOptions, createContextEngine } from "../../core/host/engine.ts";
import { extendsAnthropicPrefix, extendsOpenAIPrefix, isMessagePrefix } from "../../core/providers/prefix-extension.ts";
import {
  anthropicEventStream,
  jsonHeaders,
  openAIEventStream,
  type RecordedRequest,
  type RecordingServer,
  sseHeaders,
  startRecordingServer,
} from "../providers/server.ts";
import { testSource } from "../session/fixtures.ts";

type Reply = { kind: "tool"; name: string; input: object } | { kind: "text"; text: string };

/** Anthropic Messages answers: JSON, or SSE when the body asks for a stream. */
function anthropicAnswer(reply: Reply, request: RecordedRequest, index: number) {
  const body = JSON.parse(request.body) as { stream?: boolean; model: string };
  const block =
    reply.kind === "tool"
      ? { type: "tool_use", id: `toolu_${index}`, name: reply.name, input: reply.input }
      : { type: "text", text: reply.text };
  const stop = reply.kind === "tool" ? "tool_use" : "end_turn";
  const usage = { input_tokens: 10, output_tokens: 5 };
  if (body.stream !== true) {
    const message = { id: `msg_${index}`, type: "message", role: "assistant", model: body.model, content: [block] };
    return { headers: jsonHeaders, body: JSON.stringify({ ...message, stop_reason: stop, stop_sequence: null, usage }) };
  }
  const start = reply.kind === "tool" ? { ...block, input: {} } : { type: "text", text: "" };
  const delta =
    reply.kind === "tool"
      ? { type: "input_json_delta", partial_json: JSON.stringify(reply.input) }
      : { type: "text_delta", text: reply.text };
  return {
    headers: sseHeaders,
    body: anthropicEventStream([
      {
        type: "message_start",
        message: { id: `msg_${index}`, type: "message", role: "assistant", model: body.model, content: [], usage },
      },
      { type: "content_block_start", index: 0, content_block: start },
      { type: "content_block_delta", index: 0, delta },
      { type: "content_block_stop", index: 0 },
      { type: "message_delta", delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: 5 } },
      { type: "message_stop" },
    ]),
  };
}

/** Chat Completions answers: JSON, or SSE chunks when the body asks for a stream. */
function openAIAnswer(reply: Reply, request: RecordedRequest, index: number) {
  const body = JSON.parse(request.body) as { stream?: boolean; model: string };
  const message =
    reply.kind === "tool"
      ? {
          role: "assistant",
          content: null,
          tool_calls: [
            { id: `call_${index}`, type: "function", function: { name: reply.name, arguments: JSON.stringify(reply.input) } },
          ],
        }
      : { role: "assistant", content: reply.text };
  const finish = reply.kind === "tool" ? "tool_calls" : "stop";
  if (body.stream !== true) {
    return {
      headers: jsonHeaders,
      body: JSON.stringify({
        id: `chatcmpl_${index}`,
        object: "chat.completion",
        created: 0,
        model: body.model,
        choices: [{ index: 0, message, finish_reason: finish }],
        usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
      }),
    };
  }
  const chunk = (delta: object, finish_reason: string | null) => ({
    id: `chatcmpl_${index}`,
    object: "chat.completion.chunk",
    created: 0,
    model: body.model,
    choices: [{ index: 0, delta, finish_reason }],
  });
  const delta =
    reply.kind === "tool"
      ? { role: "assistant", tool_calls: message.tool_calls?.map((call, i) => ({ index: i, ...call })) }
      : { role: "assistant", content: reply.text };
  return { headers: sseHeaders, body: openAIEventStream([chunk(delta, null), chunk({}, finish)]) };
}

const readFile = (): Reply => ({ kind: "tool", name: "read_file", input: { path: "a.ts" } });
const say = (text: string): Reply => ({ kind: "text", text });

describe("contextMiddleware with the AI SDK", function () {
  this.timeout(20_000);
  let dir = "";
  let server: RecordingServer | undefined;
  const engines: ContextEngine[] = [];
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "ai-sdk-"));
  });
  afterEach(async () => {
    await Promise.all(engines.splice(0).map((engine) => engine.close()));
    await server?.close();
    server = undefined;
    rmSync(dir, { recursive: true, force: true });
  });

  async function start(options: Omit<ContextEngineOptions, "dataDir"> = {}): Promise<ContextEngine> {
    const engine = await createContextEngine({ builtins: false, plugins: [], watch: false, ...options, dataDir: dir });
    engines.push(engine);
    return engine;
  }

  async function serve(api: "anthropic" | "openai", script: readonly Reply[]): Promise<RecordingServer> {
    const answer = api === "anthropic" ? anthropicAnswer : openAIAnswer;
    server = await startRecordingServer((request, index) => answer(script[index] ?? say("(no more)"), request, index));
    return server;
  }

  const bodies = () => (server?.requests ?? []).map((request) => JSON.parse(request.body) as Record<string, unknown>);
  const session = (sessionId: string) => ({ "context-host": { sessionId, location: dir } });

  it("a multi-step generateText tool loop on Anthropic: each request extends the previous, the update is a native system message once", async () => {
    const branch = testSource("core/branch", "main");
    const engine = await start({ core: [branch.core] });
    await serve("anthropic", [readFile(), readFile(), say("All done.")]);
    const anthropic = createAnthropic({ baseURL: `${server!.url}/v1`, apiKey: "test" });
    const model = wrapLanguageModel({ model: anthropic("claude-opus-4-8"), middleware: contextMiddleware(engine) });
    let calls = 0;
    const result = await generateText({
      model,
      system: "You are a careful agent.",
      prompt: "Fix the failing test.",
      tools: {
        read_file: tool({
          inputSchema: jsonSchema<{ path: string }>({ type: "object", properties: { path: { type: "string" } } }),
          execute: async () => {
            calls++;
            if (calls === 1) branch.state.value = "feature"; // the environment changes between steps
            return "file contents";
          },
        }),
      },
      stopWhen: stepCountIs(5),
      providerOptions: session("s1"),
    });
    expect(result.text).to.equal("All done.");
    const sent = bodies();
    expect(sent).to.have.length(3);
    sent.slice(1).forEach((body, i) => {
      expect(extendsAnthropicPrefix(sent[i] as never, body as never), `request ${i + 2}`).to.equal(true);
    });
    const first = sent[0] as { system: { text: string }[] };
    expect(first.system.map((block) => block.text)).to.deep.equal(["You are a careful agent.", "core/branch is main"]);
    const last = sent[2] as { messages: { role: string; content: { type: string; text?: string }[] }[] };
    const updates = last.messages.flatMap((message, index) => (message.role === "system" ? [index] : []));
    expect(updates).to.have.length(1);
    const at = updates[0] as number;
    expect(last.messages[at]!.content).to.deep.equal([{ type: "text", text: "core/branch is now feature" }]);
    // Right after the tool result of the step that changed it (a user turn on the wire).
    expect(last.messages[at - 1]!.role).to.equal("user");
    expect(last.messages[at - 1]!.content[0]!.type).to.equal("tool_result");
    expect(at).to.equal(3);
  });

  it("a model without native mid-conversation system messages gets the update as <system-update> text once", async () => {
    const branch = testSource("core/branch", "main");
    const engine = await start({ core: [branch.core] });
    await serve("anthropic", [readFile(), say("Done.")]);
    const anthropic = createAnthropic({ baseURL: `${server!.url}/v1`, apiKey: "test" });
    const model = wrapLanguageModel({ model: anthropic("claude-sonnet-4-6"), middleware: contextMiddleware(engine) });
    await generateText({
      model,
      prompt: "Look.",
      tools: {
        read_file: tool({
          inputSchema: jsonSchema<{ path: string }>({ type: "object", properties: { path: { type: "string" } } }),
          execute: async () => {
            branch.state.value = "feature";
            return "contents";
          },
        }),
      },
      stopWhen: stepCountIs(3),
      providerOptions: session("s2"),
    });
    const sent = bodies();
    expect(extendsAnthropicPrefix(sent[0] as never, sent[1] as never)).to.equal(true);
    const wire = server!.requests[1]!.body;
    expect(wire.split("<system-update>core/branch is now feature</system-update>")).to.have.length(2);
    expect(wire).to.not.include('"role":"system"');
  });

  it("streamText on OpenAI Chat Completions (SSE): requests extend each other; a restart and a caller-side compaction", async () => {
    const branch = testSource("core/branch", "main");
    let engine = await start({ core: [branch.core] });
    await serve("openai", [say("One."), say("Two."), say("Three."), say("Four.")]);
    const openai = createOpenAI({ baseURL: `${server!.url}/v1`, apiKey: "test" });
    const wrap = (e: ContextEngine) => wrapLanguageModel({ model: openai.chat("gpt-4.1"), middleware: contextMiddleware(e) });
    const history: ModelMessage[] = [{ role: "user", content: "Hello." }];
    const turn = async (e: ContextEngine) => {
      const stream = streamText({ model: wrap(e), system: "You are brief.", messages: history, providerOptions: session("s3") });
      const text = await stream.text;
      history.push(...(await stream.response).messages);
      return text;
    };
    expect(await turn(engine)).to.equal("One.");
    branch.state.value = "feature";
    history.push({ role: "user", content: "And now?" });
    expect(await turn(engine)).to.equal("Two.");
    // A restart mid-session: a new engine on the same data folder continues the epoch.
    await engine.close();
    engines.splice(engines.indexOf(engine), 1);
    engine = await start({ core: [branch.core] });
    history.push({ role: "user", content: "Still there?" });
    expect(await turn(engine)).to.equal("Three.");
    const sent = bodies();
    sent.slice(1).forEach((body, i) => {
      expect(extendsOpenAIPrefix(sent[i] as never, body as never), `request ${i + 2}`).to.equal(true);
    });
    const messages = (sent[2] as { messages: { role: string; content: unknown }[] }).messages;
    expect(messages.slice(0, 2)).to.deep.equal([
      { role: "system", content: "You are brief." },
      { role: "system", content: "core/branch is main" },
    ]);
    const updates = messages.filter((message) => message.content === "core/branch is now feature");
    expect(updates).to.deep.equal([{ role: "system", content: "core/branch is now feature" }]);
    const at = messages.indexOf(updates[0] as never);
    expect(messages[at - 1]).to.deep.equal({ role: "user", content: "And now?" });

    // The caller compacts its history: a new epoch with a fresh Baseline, not an extension.
    history.splice(0, history.length, { role: "user", content: "Summary: we said hello." }, { role: "user", content: "Go on." });
    await turn(engine);
    const compacted = bodies()[3] as { messages: { role: string; content: unknown }[] };
    expect(compacted.messages[1]).to.deep.equal({ role: "system", content: "core/branch is feature" });
    expect(isMessagePrefix((sent[2] as { messages: unknown[] }).messages, compacted.messages)).to.equal(false);
  });

  it("a ToolLoopAgent sees a plugin edited mid-run", async () => {
    const plugins = mkdtempSync(path.join(os.tmpdir(), "ai-sdk-plugins-"));
    const write = (sky: string) =>
      writeFileSync(
        path.join(plugins, "weather.ts"),
        `import Type from "typebox";
import { definePlugin } from "context-host/plugin";
export default definePlugin({
  name: "weather",
  setup(api) {
    api.source({
      key: "weather/today",
      schema: Type.String(),
      load: () => "${sky}",
      baseline: (sky) => "The sky is " + sky + ".",
      update: (_previous, sky) => "The sky is now " + sky + ".",
    });
  },
});
`,
      );
    try {
      write("clear");
      const engine = await start({ plugins: [plugins], watch: true, debounceMs: 10 });
      await serve("anthropic", [readFile(), say("Noted.")]);
      const anthropic = createAnthropic({ baseURL: `${server!.url}/v1`, apiKey: "test" });
      const reloaded = new Promise<void>((resolve) => {
        const stop = engine.onPluginEvent((event) => {
          if (event.kind === "activated" && event.generation === 2) {
            stop();
            resolve();
          }
        });
      });
      const agent = new ToolLoopAgent({
        model: wrapLanguageModel({ model: anthropic("claude-opus-4-8"), middleware: contextMiddleware(engine) }),
        tools: {
          read_file: tool({
            inputSchema: jsonSchema<{ path: string }>({ type: "object", properties: { path: { type: "string" } } }),
            execute: async () => {
              write("cloudy"); // the plugin is edited while the agent runs
              await reloaded;
              return "contents";
            },
          }),
        },
        stopWhen: stepCountIs(3),
        providerOptions: session("s4"),
      });
      const result = await agent.generate({ prompt: "What is the weather?" });
      expect(result.text).to.equal("Noted.");
      const [first, second] = bodies() as {
        system: { text: string }[];
        messages: { role: string; content: { text?: string }[] }[];
      }[];
      expect(first!.system.map((block) => block.text)).to.deep.equal(["The sky is clear."]);
      expect(extendsAnthropicPrefix(first as never, second as never)).to.equal(true);
      expect(second!.messages.at(-1)).to.deep.equal({
        role: "system",
        content: [{ type: "text", text: "The sky is now cloudy." }],
      });
    } finally {
      rmSync(plugins, { recursive: true, force: true });
    }
  });

  it("passes a call that names no session through unchanged, and refuses a malformed session option", async () => {
    const engine = await start({ core: [testSource("core/branch", "main").core] });
    await serve("anthropic", [say("Plain."), say("never")]);
    const anthropic = createAnthropic({ baseURL: `${server!.url}/v1`, apiKey: "test" });
    const model = wrapLanguageModel({ model: anthropic("claude-opus-4-8"), middleware: contextMiddleware(engine) });
    await generateText({ model, prompt: "Hi." });
    expect(bodies()[0]).to.not.have.property("system");
    let error: unknown;
    await generateText({ model, prompt: "Hi.", providerOptions: { "context-host": { session: "x" } } }).catch((e: unknown) => {
      error = e;
    });
    expect(String(error)).to.match(/providerOptions\["context-host"\].*sessionId/);
  });
});
