// The `anthropic` adapter against a local recording server: wire bytes, streaming,
// the JSON fallback, retries, timeouts and error mapping. Nothing leaves 127.0.0.1.

import type Anthropic from "@anthropic-ai/sdk";
import { expect } from "chai";
import { ContextHostError } from "../../core/base/errors.ts";
import {
  type AnthropicMessagesBody,
  type AnthropicProviderOptions,
  ApiKeyMissing,
  anthropicProvider,
  extendsAnthropicPrefix,
  ProviderRejected,
  ProviderReplyInvalid,
  type ProviderRequest,
  ProviderTimedOut,
  ProviderUnavailable,
} from "../../core/providers/index.ts";
import { StreamInterrupted } from "../../core/providers/transport.ts";
import { inEpochRequests, scriptedSteps } from "./conversation.ts";
import {
  anthropicEventStream,
  jsonHeaders,
  rawMessages,
  type ScriptedAnswer,
  serverPerTest,
  splitEvery,
  sseHeaders,
} from "./server.ts";

const breakpointBytes = ',"cache_control":{"type":"ephemeral"}';

/** A streamed text reply as the API sends it, one delta per character. */
function textStream(text: string): string {
  return anthropicEventStream([
    { type: "message_start", message: { id: "msg_1", type: "message", role: "assistant", content: [], model: "m" } },
    { type: "content_block_start", index: 0, content_block: { type: "text", text: "", citations: null } },
    ...[...text].map((character) => ({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: character } })),
    { type: "ping" },
    { type: "content_block_stop", index: 0 },
    { type: "message_delta", delta: { stop_reason: "end_turn", stop_sequence: null } },
    { type: "message_stop" },
  ]);
}

const toolStreamEvents = [
  { type: "content_block_start", index: 0, content_block: { type: "text", text: "", citations: null } },
  { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "Reading." } },
  { type: "content_block_stop", index: 0 },
  {
    type: "content_block_start",
    index: 1,
    content_block: { type: "tool_use", id: "toolu_1", name: "read_file", input: {}, caller: { type: "direct" } },
  },
  { type: "content_block_delta", index: 1, delta: { type: "input_json_delta", partial_json: '{"path":' } },
  { type: "content_block_delta", index: 1, delta: { type: "input_json_delta", partial_json: '"a.ts","line":3}' } },
  { type: "content_block_stop", index: 1 },
  {
    type: "content_block_start",
    index: 2,
    content_block: { type: "tool_use", id: "toolu_2", name: "list", input: {}, caller: { type: "direct" } },
  },
  { type: "content_block_stop", index: 2 },
  { type: "message_stop" },
] satisfies Anthropic.RawMessageStreamEvent[];

const jsonReply = {
  id: "msg_1",
  type: "message",
  role: "assistant",
  model: "m",
  content: [
    { type: "text", text: "Here.", citations: null },
    { type: "tool_use", id: "toolu_9", name: "grep", input: { pattern: "x" }, caller: { type: "direct" } },
  ] satisfies Anthropic.ContentBlock[],
};

const okText: ScriptedAnswer = { headers: sseHeaders, body: textStream("ok") };

describe("anthropic adapter", () => {
  const { server, serve, delays, recordedWaits } = serverPerTest();

  function provider(options: Partial<AnthropicProviderOptions> = {}) {
    return anthropicProvider({ apiKey: "test-key", baseURL: server.url, ...recordedWaits, ...options });
  }

  const request: ProviderRequest = inEpochRequests(scriptedSteps)[0]!;

  for (const [model, updateBytes] of [
    ["claude-opus-4-8", '{"role":"system","content":[{"type":"text","text":"cwd: /work/app"}]}'],
    ["claude-sonnet-4-6", '{"type":"text","text":"<system-update>cwd: /work/app</system-update>"}'],
  ] as const) {
    it(`the recorded bytes of consecutive in-epoch requests extend the previous request's messages, in order (${model})`, async () => {
      await serve(() => okText);
      const requests = inEpochRequests(scriptedSteps, { model });
      const send = provider({ tools: [{ name: "read_file", inputSchema: { type: "object" } }] });
      for (const each of requests) await send.send(each);
      expect(server.requests).to.have.length(requests.length);
      server.requests.slice(1).forEach((next, index) => {
        const previous = server.requests[index]!;
        // Everything before the messages (model, max_tokens, tools, system) is byte-identical.
        expect(next.body.slice(0, next.body.indexOf('"messages":'))).to.equal(
          previous.body.slice(0, previous.body.indexOf('"messages":')),
        );
        const previousMessages = rawMessages(previous.body).replaceAll(breakpointBytes, "");
        const nextMessages = rawMessages(next.body).replaceAll(breakpointBytes, "");
        expect(nextMessages.startsWith(previousMessages.slice(0, -1)), `request ${index + 1}`).to.equal(true);
        expect(extendsAnthropicPrefix(JSON.parse(previous.body), JSON.parse(next.body))).to.equal(true);
      });
      expect(server.requests.at(-1)!.body).to.include(updateBytes);
    });
  }

  it("posts JSON with the API key and version to <baseURL>/v1/messages, asking for a stream", async () => {
    await serve(() => okText);
    await provider({ baseURL: `${server.url}/` }).send(request);
    const [recorded] = server.requests;
    expect(recorded!.method).to.equal("POST");
    expect(recorded!.path).to.equal("/v1/messages");
    expect(recorded!.headers).to.include({
      "x-api-key": "test-key",
      "anthropic-version": "2023-06-01",
      "content-type": "application/json",
      accept: "text/event-stream",
    });
    const body = JSON.parse(recorded!.body) as AnthropicMessagesBody & { stream: boolean };
    expect(body.stream).to.equal(true);
    expect(body.max_tokens).to.equal(8192);
  });

  it("reads the API key from ANTHROPIC_API_KEY, or fails with ApiKeyMissing naming the variable", async () => {
    await serve(() => okText);
    const saved = process.env.ANTHROPIC_API_KEY;
    try {
      process.env.ANTHROPIC_API_KEY = "from-env";
      await anthropicProvider({ baseURL: server.url }).send(request);
      expect(server.requests[0]!.headers["x-api-key"]).to.equal("from-env");
      delete process.env.ANTHROPIC_API_KEY;
      const error = await anthropicProvider({ baseURL: server.url })
        .send(request)
        .catch((caught: unknown) => caught);
      expect(error).to.be.instanceOf(ApiKeyMissing).with.property("variable", "ANTHROPIC_API_KEY");
      expect(server.requests).to.have.length(1);
    } finally {
      if (saved === undefined) delete process.env.ANTHROPIC_API_KEY;
      else process.env.ANTHROPIC_API_KEY = saved;
    }
  });

  it("assembles streamed text from deltas split across arbitrary chunks", async () => {
    await serve(() => ({ headers: sseHeaders, chunks: splitEvery(textStream("Hello, world"), 7) }));
    expect(await provider().send(request)).to.deep.equal({ text: "Hello, world" });
  });

  it("assembles streamed tool calls from input_json_delta fragments, an empty input staying {}", async () => {
    await serve(() => ({ headers: sseHeaders, chunks: splitEvery(anthropicEventStream(toolStreamEvents), 11) }));
    expect(await provider().send(request)).to.deep.equal({
      text: "Reading.",
      toolCalls: [
        { id: "toolu_1", name: "read_file", input: { path: "a.ts", line: 3 } },
        { id: "toolu_2", name: "list", input: {} },
      ],
    });
  });

  it("with stream: false, sends no stream field and reads the JSON reply", async () => {
    await serve(() => ({ headers: jsonHeaders, body: JSON.stringify(jsonReply) }));
    const reply = await provider({ stream: false }).send(request);
    expect(reply).to.deep.equal({ text: "Here.", toolCalls: [{ id: "toolu_9", name: "grep", input: { pattern: "x" } }] });
    expect(JSON.parse(server.requests[0]!.body)).not.to.have.property("stream");
    expect(server.requests[0]!.headers.accept).to.equal("application/json");
  });

  it("falls back to reading JSON when a streaming request is answered without an event stream", async () => {
    await serve(() => ({ headers: jsonHeaders, body: JSON.stringify(jsonReply) }));
    expect((await provider().send(request)).text).to.equal("Here.");
  });

  it("retries a 500 with byte-identical bytes", async () => {
    await serve((index) =>
      index === 0 ? { status: 500, body: '{"type":"error","error":{"type":"api_error","message":"boom"}}' } : okText,
    );
    expect(await provider().send(request)).to.deep.equal({ text: "ok" });
    expect(server.requests).to.have.length(2);
    expect(server.requests[1]!.body).to.equal(server.requests[0]!.body);
    expect(server.requests[1]!.headers["x-api-key"]).to.equal(server.requests[0]!.headers["x-api-key"]);
  });

  it("retries a 429 after the retry-after the server sent, resending identical bytes", async () => {
    await serve((index) =>
      index === 0
        ? {
            status: 429,
            headers: { ...jsonHeaders, "retry-after": "2" },
            body: '{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}',
          }
        : okText,
    );
    await provider().send(request);
    expect(delays).to.deep.equal([2000]);
    expect(server.requests[1]!.body).to.equal(server.requests[0]!.body);
  });

  it("retries a stream that reports an error event, resending identical bytes", async () => {
    const overloaded = anthropicEventStream([{ type: "error", error: { type: "overloaded_error", message: "Overloaded" } }]);
    await serve((index) => (index === 0 ? { headers: sseHeaders, body: overloaded } : okText));
    expect(await provider().send(request)).to.deep.equal({ text: "ok" });
    expect(server.requests[1]!.body).to.equal(server.requests[0]!.body);
  });

  it("retries a stream that ends before message_stop", async () => {
    const cut = textStream("ok").split("event: message_stop")[0]!;
    await serve((index) => (index === 0 ? { headers: sseHeaders, body: cut } : okText));
    expect(await provider().send(request)).to.deep.equal({ text: "ok" });
    expect(server.requests).to.have.length(2);
  });

  it("a stream cut on every attempt fails with ProviderUnavailable caused by StreamInterrupted naming the provider and URL", async () => {
    const cut = textStream("ok").split("event: message_stop")[0]!;
    await serve(() => ({ headers: sseHeaders, body: cut }));
    const error = await provider({ maxRetries: 1 })
      .send(request)
      .catch((caught: unknown) => caught);
    expect(error).to.be.instanceOf(ProviderUnavailable);
    expect(error).to.include({ attempts: 2, reason: "stream ended before message_stop" });
    const cause = (error as Error).cause as StreamInterrupted;
    expect(cause).to.be.instanceOf(StreamInterrupted).and.instanceOf(ContextHostError);
    expect(cause).to.include({ name: "StreamInterrupted", provider: "anthropic", reason: "stream ended before message_stop" });
    expect(cause.url).to.contain(server.url);
    expect(cause.message).to.equal(`anthropic reply stream from ${cause.url} interrupted: stream ended before message_stop`);
  });

  it("maps a 4xx to ProviderRejected with the API's status, type and message, without retrying", async () => {
    await serve(() => ({
      status: 400,
      headers: jsonHeaders,
      body: '{"type":"error","error":{"type":"invalid_request_error","message":"messages: roles must alternate"}}',
    }));
    const error = await provider()
      .send(request)
      .catch((caught: unknown) => caught);
    expect(error).to.be.instanceOf(ProviderRejected);
    expect(error).to.include({ status: 400, apiMessage: "messages: roles must alternate", errorType: "invalid_request_error" });
    expect((error as Error).message)
      .to.include("400")
      .and.include("messages: roles must alternate")
      .and.include(server.url);
    expect(server.requests).to.have.length(1);
  });

  it("gives up after maxRetries with ProviderUnavailable carrying the last status and message", async () => {
    await serve(() => ({
      status: 529,
      headers: jsonHeaders,
      body: '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
    }));
    const error = await provider({ maxRetries: 3 })
      .send(request)
      .catch((caught: unknown) => caught);
    expect(error).to.be.instanceOf(ProviderUnavailable);
    expect(error).to.include({ attempts: 4, status: 529, reason: "Overloaded" });
    expect(server.requests).to.have.length(4);
    expect(new Set(server.requests.map((each) => each.body)).size).to.equal(1);
  });

  it("fails with ProviderTimedOut when the server does not answer within timeoutMs, after retrying", async () => {
    await serve(() => ({ hang: true }));
    const error = await provider({ timeoutMs: 50, maxRetries: 1 })
      .send(request)
      .catch((caught: unknown) => caught);
    expect(error).to.be.instanceOf(ProviderTimedOut);
    expect(error).to.include({ timeoutMs: 50, attempts: 2 });
    expect(server.requests).to.have.length(2);
  });

  it("retries a refused connection, then fails with ProviderUnavailable naming the network error", async () => {
    await serve(() => okText);
    const url = server.url;
    await server.close();
    const error = await anthropicProvider({ apiKey: "k", baseURL: url, retry: { baseDelayMs: 1 }, maxRetries: 1 })
      .send(request)
      .catch((caught: unknown) => caught);
    expect(error).to.be.instanceOf(ProviderUnavailable);
    expect(error).to.include({ attempts: 2, status: undefined });
    expect((error as ProviderUnavailable).reason).to.include("ECONNREFUSED");
  });

  it("fails with ProviderReplyInvalid when a 2xx reply is not a message", async () => {
    await serve(() => ({ headers: jsonHeaders, body: "<html>proxy error</html>" }));
    const error = await provider()
      .send(request)
      .catch((caught: unknown) => caught);
    expect(error).to.be.instanceOf(ProviderReplyInvalid);
    expect((error as Error).message).to.include("<html>proxy error</html>");
    expect(server.requests).to.have.length(1);
  });
});
