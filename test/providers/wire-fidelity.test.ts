// Wire fidelity: bodies and replies checked against the providers' published rules
// (Anthropic Messages API, OpenAI Chat Completions, WHATWG event streams), stated here as
// predicates over any body rather than as expected bytes of our own output.

import { expect } from "chai";
import {
  type AnthropicMessagesBody,
  anthropicProvider,
  explainPrefix,
  lowerAnthropic,
  lowerOpenAI,
  openAICapabilities,
  openAICompatibleProvider,
  openAIModels,
  type ProviderRequest,
  ProviderUnavailable,
  type RequestMessage,
} from "../../core/providers/index.ts";
import { hostsPerTest } from "../session/fixtures.ts";
import { anthropicEventStream, jsonHeaders, openAIEventStream, serverPerTest, sseHeaders } from "./server.ts";

type Block = { type: string; [field: string]: unknown };

/** Every violation of the Messages API's published content rules in `body`. */
function anthropicViolations(body: AnthropicMessagesBody): string[] {
  const found: string[] = [];
  const idPattern = /^[a-zA-Z0-9_-]+$/; // tool_use.id and tool_result.tool_use_id
  const checkText = (block: Block, where: string) => {
    // "text content blocks must contain non-whitespace text"
    if (block.type === "text" && !/\S/.test(String(block.text))) found.push(`${where}: whitespace-only text`);
  };
  for (const [i, block] of (body.system ?? []).entries()) checkText(block as unknown as Block, `system.${i}`);
  let previousToolUses = new Set<string>();
  body.messages.forEach((message, m) => {
    const content = message.content as Block[];
    if (content.length === 0) found.push(`messages.${m}: empty content`);
    content.forEach((block, b) => {
      const where = `messages.${m}.content.${b}`;
      checkText(block, where);
      if (block.type === "tool_use") {
        if (!idPattern.test(String(block.id))) found.push(`${where}: tool_use.id ${String(block.id)}`);
        const input = block.input;
        if (input === null || typeof input !== "object" || Array.isArray(input)) found.push(`${where}: input is not an object`);
      }
      if (block.type === "tool_result") {
        const id = String(block.tool_use_id);
        if (!idPattern.test(id)) found.push(`${where}: tool_use_id ${id}`);
        // each tool_result answers a tool_use of the immediately preceding assistant message
        if (!previousToolUses.has(id)) found.push(`${where}: tool_use_id ${id} answers no tool_use of the previous message`);
      }
      if ((block.type === "thinking" || block.type === "redacted_thinking") && message.role !== "assistant") {
        found.push(`${where}: thinking outside an assistant turn`);
      }
    });
    previousToolUses = new Set(
      message.role === "assistant" ? content.filter((b) => b.type === "tool_use").map((b) => String(b.id)) : [],
    );
  });
  return found;
}

const request = (messages: RequestMessage[], model = "claude-opus-4-8"): ProviderRequest => ({
  provider: "anthropic",
  model,
  system: ["PROMPT", "BASELINE"],
  messages,
});

/** A history an OpenAI-compatible server wrote, continued on Anthropic after a switch. */
const switchedHistory: RequestMessage[] = [
  { role: "user", text: "read it" },
  {
    role: "assistant",
    text: "\n\n",
    toolCalls: [
      { id: "functions.read_file:0", name: "read_file", input: null },
      { id: "functions.read_file:1", name: "read_file", input: ["a", "b"] },
      { id: "", name: "list", input: undefined },
    ],
  },
  { role: "tool", callId: "functions.read_file:0", name: "read_file", result: "A" },
  { role: "tool", callId: "functions.read_file:1", name: "read_file", result: "B" },
  { role: "tool", callId: "", name: "list", result: "C" },
  { role: "system-update", text: "\n" },
  { role: "assistant", text: " \t" },
  { role: "user", text: "go on" },
  { role: "system-update", text: "   " },
];

describe("wire fidelity", () => {
  describe("Anthropic Messages API content rules", () => {
    it("sends no whitespace-only text block, in system or messages, native or wrapped updates alike", () => {
      for (const nativeSystemMessages of [false, true]) {
        const body = lowerAnthropic(
          { ...request(switchedHistory), system: ["\n\n", "BASELINE"] },
          {
            nativeSystemMessages,
            maxTokens: 1024,
          },
        );
        expect(
          anthropicViolations(body).filter((v) => v.includes("whitespace")),
          `native ${nativeSystemMessages}`,
        ).to.deep.equal([]);
      }
    });

    it("maps tool ids to ^[a-zA-Z0-9_-]+$ deterministically and one-to-one, keeping the original in history", () => {
      const history = structuredClone(switchedHistory);
      const first = lowerAnthropic(request(history), { nativeSystemMessages: false, maxTokens: 1024 });
      const again = lowerAnthropic(request(history), { nativeSystemMessages: false, maxTokens: 1024 });
      expect(anthropicViolations(first)).to.deep.equal([]);
      expect(JSON.stringify(again)).to.equal(JSON.stringify(first));
      const ids = (first.messages[1]!.content as Block[]).filter((b) => b.type === "tool_use").map((b) => b.id);
      expect(new Set(ids).size).to.equal(3);
      expect(history).to.deep.equal(switchedHistory);
      // a longer history maps the same ids the same way: the cache prefix holds
      const longer = lowerAnthropic(request([...history, { role: "assistant", text: "ok" }, { role: "user", text: "more" }]), {
        nativeSystemMessages: false,
        maxTokens: 1024,
      });
      expect(JSON.stringify(longer.messages[1])).to.equal(JSON.stringify(first.messages[1]));
    });

    it("sends every tool input as an object, whatever the arguments were", () => {
      const body = lowerAnthropic(request(switchedHistory), { nativeSystemMessages: false, maxTokens: 1024 });
      expect(anthropicViolations(body).filter((v) => v.includes("input"))).to.deep.equal([]);
    });

    it("with cacheTtl, puts 1-hour breakpoints before 5-minute ones and uses at most 4", () => {
      for (const cacheTtl of ["5m", "1h-system", "1h"] as const) {
        const body = lowerAnthropic(
          request([{ role: "user", text: "hi" }]),
          { nativeSystemMessages: false, maxTokens: 1024 },
          {
            cacheTtl,
          },
        );
        const ttls: string[] = [];
        JSON.stringify(body, (key, value) => {
          if (key === "cache_control") ttls.push((value as { ttl?: string }).ttl ?? "5m");
          return value;
        });
        expect(ttls.length, cacheTtl).to.be.within(1, 4);
        expect(ttls.indexOf("5m") === -1 || ttls.lastIndexOf("1h") < ttls.indexOf("5m"), `${cacheTtl}: ${ttls}`).to.equal(true);
        expect(ttls.includes("1h"), cacheTtl).to.equal(cacheTtl !== "5m");
      }
    });
  });

  describe("through the adapters", () => {
    const { server, serve, recordedWaits } = serverPerTest();
    const hosts = hostsPerTest();

    const signature = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds";
    const thinkingReply = anthropicEventStream([
      {
        type: "message_start",
        message: {
          id: "msg_1",
          type: "message",
          role: "assistant",
          content: [],
          model: "m",
          usage: { input_tokens: 12, cache_creation_input_tokens: 100, cache_read_input_tokens: 7, output_tokens: 1 },
        },
      },
      { type: "content_block_start", index: 0, content_block: { type: "thinking", thinking: "", signature: "" } },
      { type: "content_block_delta", index: 0, delta: { type: "thinking_delta", thinking: "Let me read " } },
      { type: "content_block_delta", index: 0, delta: { type: "thinking_delta", thinking: "the file." } },
      { type: "content_block_delta", index: 0, delta: { type: "signature_delta", signature } },
      { type: "content_block_stop", index: 0 },
      { type: "content_block_start", index: 1, content_block: { type: "text", text: "" } },
      { type: "content_block_delta", index: 1, delta: { type: "text_delta", text: "\n\n" } },
      { type: "content_block_stop", index: 1 },
      { type: "content_block_start", index: 2, content_block: { type: "redacted_thinking", data: "EmwKAhgBEgy3va3pzix" } },
      { type: "content_block_stop", index: 2 },
      {
        type: "content_block_start",
        index: 3,
        content_block: { type: "tool_use", id: "toolu_01A", name: "read_file", input: {} },
      },
      { type: "content_block_delta", index: 3, delta: { type: "input_json_delta", partial_json: "null" } },
      { type: "content_block_stop", index: 3 },
      { type: "message_delta", delta: { stop_reason: "tool_use" }, usage: { output_tokens: 40 } },
      { type: "message_stop" },
    ]);
    const doneReply = anthropicEventStream([
      { type: "content_block_start", index: 0, content_block: { type: "text", text: "done" } },
      { type: "content_block_stop", index: 0 },
      { type: "message_stop" },
    ]);

    it("stores thinking blocks and usage with the assistant message and sends the blocks back unchanged, first in the turn", async () => {
      await serve((index) => ({ headers: sseHeaders, body: index === 0 ? thinkingReply : doneReply }));
      const provider = anthropicProvider({
        baseURL: server.url,
        apiKey: "k",
        models: [{ model: /^m$/, capabilities: { replaysThinking: true } }],
      });
      const { host, id } = await hosts.startSession(provider, { core: [], tools: { read_file: () => "contents" } });
      await host.prompt(id, "read the file");
      await host.step(id);
      await host.step(id);

      const second = JSON.parse(server.requests[1]!.body) as AnthropicMessagesBody;
      expect(anthropicViolations(second)).to.deep.equal([]);
      const assistant = second.messages.find((message) => message.role === "assistant")!;
      // the thinking block exactly as the stream built it: every delta joined, signature intact
      expect(JSON.stringify(assistant.content[0])).to.equal(
        JSON.stringify({ type: "thinking", thinking: "Let me read the file.", signature }),
      );
      expect(JSON.stringify(assistant.content[1])).to.equal(
        JSON.stringify({ type: "redacted_thinking", data: "EmwKAhgBEgy3va3pzix" }),
      );
      expect(assistant.content.map((block) => block.type)).to.deep.equal(["thinking", "redacted_thinking", "tool_use"]);

      const stored = (await host.messages(id)).find((message) => message.role === "assistant")!;
      expect(stored.usage).to.deep.equal({ input: 12, cacheRead: 7, cacheWrite: 100, output: 40 });
      expect(stored.toolCalls).to.deep.equal([{ id: "toolu_01A", name: "read_file", input: null }]);
    });

    it("a stream closed in the middle of its last event is retried and ends as ProviderUnavailable", async () => {
      // WHATWG: an event not terminated by a blank line when the stream ends is discarded,
      // so message_stop never arrives.
      const cut = doneReply.slice(0, -1);
      await serve(() => ({ headers: sseHeaders, body: cut }));
      const provider = anthropicProvider({ baseURL: server.url, apiKey: "k", maxRetries: 2, ...recordedWaits });
      const error = await provider.send(request([{ role: "user", text: "hi" }])).catch((e: unknown) => e);
      expect(error).to.be.instanceOf(ProviderUnavailable);
      expect(server.requests).to.have.length(3);
    });

    it("surfaces an OpenAI refusal, streamed or not, and reads usage with cached tokens", async () => {
      const refusal = "I can't help with that.";
      const stream = openAIEventStream([
        { choices: [{ index: 0, delta: { role: "assistant", content: null, refusal: "I can't " }, finish_reason: null }] },
        { choices: [{ index: 0, delta: { refusal: "help with that." }, finish_reason: "stop" }] },
        { choices: [], usage: { prompt_tokens: 2000, completion_tokens: 9, prompt_tokens_details: { cached_tokens: 1536 } } },
      ]);
      const json = {
        choices: [{ index: 0, message: { role: "assistant", content: null, refusal }, finish_reason: "stop" }],
        usage: { prompt_tokens: 10, completion_tokens: 3 },
      };
      await serve((index) =>
        index === 0 ? { headers: sseHeaders, body: stream } : { headers: jsonHeaders, body: JSON.stringify(json) },
      );
      const streaming = openAICompatibleProvider({ baseURL: server.url, apiKey: "", models: openAIModels });
      const streamed = await streaming.send({ ...request([{ role: "user", text: "x" }], "gpt-5"), sessionId: "s-1" });
      expect(streamed).to.deep.include({ refusal, text: refusal });
      expect(streamed.usage).to.deep.equal({ input: 464, cacheRead: 1536, cacheWrite: 0, output: 9 });
      const body = JSON.parse(server.requests[0]!.body) as Record<string, unknown>;
      expect(body.prompt_cache_key).to.equal("s-1");
      expect(body.stream_options).to.deep.equal({ include_usage: true });

      const plain = openAICompatibleProvider({ baseURL: server.url, apiKey: "", stream: false });
      const answered = await plain.send({ ...request([{ role: "user", text: "x" }], "qwen3"), sessionId: "s-1" });
      expect(answered).to.deep.include({ refusal, text: refusal });
      expect(JSON.parse(server.requests[1]!.body)).to.not.have.any.keys("prompt_cache_key", "stream_options");
    });
  });

  describe("prompt_cache_key", () => {
    it("is the session id for models declared to accept it, and absent otherwise", () => {
      const req = { ...request([{ role: "user", text: "x" }], "gpt-5.1"), sessionId: "abc" };
      expect(lowerOpenAI(req, openAICapabilities("gpt-5.1", openAIModels)).prompt_cache_key).to.equal("abc");
      expect(lowerOpenAI(req, openAICapabilities("gpt-5.1"))).to.not.have.property("prompt_cache_key");
    });
  });

  describe("explainPrefix", () => {
    const base: ProviderRequest = {
      provider: "anthropic",
      model: "m",
      system: ["PROMPT", "date: 2026-12-02\n\nbranch: main\nclean"],
      messages: [{ role: "user", text: "one" }],
      epoch: { number: 1, reason: "initial" },
    };

    it("says an appended request extends, and names the paragraph of a baseline that changed within an epoch", () => {
      const next = { ...base, messages: [...base.messages, { role: "assistant" as const, text: "a" }] };
      expect(explainPrefix(base, next)).to.deep.equal({ kind: "extends" });
      const broken = { ...next, system: ["PROMPT", "date: 2026-12-02\n\nbranch: feature\nclean"] };
      const explained = explainPrefix(base, broken);
      expect(explained.kind).to.equal("break-within-epoch");
      expect(explained).to.have.nested.property("at.part", "system");
      expect(explained).to.have.nested.property("at.paragraph", 1);
      expect(explained).to.have.nested.property("at.nextLine", "branch: feature");
    });

    it("names a new epoch by its reason", () => {
      const compacted: ProviderRequest = {
        ...base,
        messages: [{ role: "summary", text: "so far" }],
        epoch: { number: 2, reason: "compaction" },
      };
      expect(explainPrefix(base, compacted)).to.deep.include({ kind: "new-epoch", reason: "compaction" });
      const { epoch: _a, ...noEpoch } = base;
      expect(explainPrefix(noEpoch, { ...noEpoch, model: "n" })).to.deep.include({ kind: "new-epoch", reason: "switch" });
    });
  });
});
