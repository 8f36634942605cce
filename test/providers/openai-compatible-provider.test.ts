// The `openai-compatible` adapter against a local recording server: wire bytes,
// streaming, the JSON fallback, retries, timeouts and error mapping. Nothing leaves 127.0.0.1.

import { expect } from "chai";
import type OpenAI from "openai";
import {
  extendsOpenAIPrefix,
  type OpenAICompatibleProviderOptions,
  openAICompatibleProvider,
  openAIModels,
  ProviderRejected,
  type ProviderRequest,
  ProviderTimedOut,
} from "../../core/providers/index.ts";
import { inEpochRequests, scriptedSteps } from "./conversation.ts";
import {
  jsonHeaders,
  openAIEventStream,
  rawMessages,
  type ScriptedAnswer,
  serverPerTest,
  splitEvery,
  sseHeaders,
} from "./server.ts";

function chunk(delta: OpenAI.Chat.ChatCompletionChunk.Choice.Delta, finish: "stop" | "tool_calls" | null = null) {
  return {
    id: "chatcmpl-1",
    object: "chat.completion.chunk",
    created: 0,
    model: "m",
    choices: [{ index: 0, delta, finish_reason: finish }],
  } satisfies OpenAI.Chat.ChatCompletionChunk;
}

function textStream(text: string): string {
  return openAIEventStream([
    chunk({ role: "assistant", content: "" }),
    ...[...text].map((character) => chunk({ content: character })),
    chunk({}, "stop"),
  ]);
}

const toolStream = openAIEventStream([
  chunk({ role: "assistant", content: "Checking." }),
  chunk({ tool_calls: [{ index: 0, id: "call_a", type: "function", function: { name: "read_file", arguments: "" } }] }),
  chunk({ tool_calls: [{ index: 0, function: { arguments: '{"path":' } }] }),
  chunk({ tool_calls: [{ index: 1, id: "call_b", type: "function", function: { name: "grep", arguments: '{"pattern":"x"}' } }] }),
  chunk({ tool_calls: [{ index: 0, function: { arguments: '"a.ts"}' } }] }),
  chunk({}, "tool_calls"),
]);

const completion = {
  id: "chatcmpl-1",
  object: "chat.completion",
  created: 0,
  model: "m",
  choices: [
    {
      index: 0,
      finish_reason: "tool_calls",
      logprobs: null,
      message: {
        role: "assistant",
        content: "Here.",
        refusal: null,
        tool_calls: [{ id: "call_9", type: "function", function: { name: "grep", arguments: '{"pattern":"y"}' } }],
      },
    },
  ],
} satisfies OpenAI.Chat.ChatCompletion;

const okText: ScriptedAnswer = { headers: sseHeaders, body: textStream("ok") };

describe("openai-compatible adapter", () => {
  const { server, serve, delays, recordedWaits } = serverPerTest();

  function provider(options: Partial<OpenAICompatibleProviderOptions> = {}) {
    return openAICompatibleProvider({ baseURL: `${server.url}/v1`, apiKey: "", ...recordedWaits, ...options });
  }

  const request: ProviderRequest = inEpochRequests(scriptedSteps)[0]!;

  for (const [name, models, updateBytes] of [
    ["wrapped updates", [], '{"role":"user","content":"<system-update>cwd: /work/app</system-update>"}'],
    ["developer messages", openAIModels, '{"role":"developer","content":"cwd: /work/app"}'],
  ] as const) {
    it(`the recorded bytes of consecutive in-epoch requests extend the previous request's messages, in order (${name})`, async () => {
      await serve(() => okText);
      const requests = inEpochRequests(scriptedSteps, { model: "gpt-5" });
      const send = provider({ models, tools: [{ name: "read_file", inputSchema: { type: "object" } }] });
      for (const each of requests) await send.send(each);
      server.requests.slice(1).forEach((next, index) => {
        const previous = server.requests[index]!;
        expect(next.body.slice(0, next.body.indexOf('"messages":'))).to.equal(
          previous.body.slice(0, previous.body.indexOf('"messages":')),
        );
        expect(rawMessages(next.body).startsWith(rawMessages(previous.body).slice(0, -1)), `request ${index + 1}`).to.equal(true);
        expect(extendsOpenAIPrefix(JSON.parse(previous.body), JSON.parse(next.body))).to.equal(true);
      });
      expect(server.requests.at(-1)!.body).to.include(updateBytes);
    });
  }

  it("posts to <baseURL>/chat/completions with a bearer key only when one is set", async () => {
    await serve(() => okText);
    await provider().send(request);
    await provider({ apiKey: "sk-local" }).send(request);
    const [keyless, keyed] = server.requests;
    expect(keyless!.path).to.equal("/v1/chat/completions");
    expect(keyless!.headers).not.to.have.property("authorization");
    expect(keyed!.headers).to.include({ authorization: "Bearer sk-local", "content-type": "application/json" });
    expect(JSON.parse(keyed!.body)).to.include({ stream: true });
  });

  it("assembles streamed text from chunks split anywhere", async () => {
    await serve(() => ({ headers: sseHeaders, chunks: splitEvery(textStream("Hello, world"), 5) }));
    expect(await provider().send(request)).to.deep.equal({ text: "Hello, world" });
  });

  it("assembles streamed parallel tool calls from argument fragments joined by index", async () => {
    await serve(() => ({ headers: sseHeaders, chunks: splitEvery(toolStream, 13) }));
    expect(await provider().send(request)).to.deep.equal({
      text: "Checking.",
      toolCalls: [
        { id: "call_a", name: "read_file", input: { path: "a.ts" } },
        { id: "call_b", name: "grep", input: { pattern: "x" } },
      ],
    });
  });

  it("with stream: false, sends no stream field and reads the JSON completion", async () => {
    await serve(() => ({ headers: jsonHeaders, body: JSON.stringify(completion) }));
    const reply = await provider({ stream: false }).send(request);
    expect(reply).to.deep.equal({ text: "Here.", toolCalls: [{ id: "call_9", name: "grep", input: { pattern: "y" } }] });
    expect(JSON.parse(server.requests[0]!.body)).not.to.have.property("stream");
  });

  it("falls back to reading JSON when a streaming request is answered without an event stream", async () => {
    await serve(() => ({ headers: jsonHeaders, body: JSON.stringify(completion) }));
    expect((await provider().send(request)).text).to.equal("Here.");
  });

  it("retries a 503 and a 429 with retry-after as an HTTP date, resending identical bytes", async () => {
    const inTwoSeconds = new Date(Date.now() + 2500).toUTCString();
    await serve((index) => {
      if (index === 0) return { status: 503, headers: jsonHeaders, body: '{"error":{"message":"down","type":"server_error"}}' };
      if (index === 1)
        return { status: 429, headers: { ...jsonHeaders, "retry-after": inTwoSeconds }, body: '{"error":{"message":"slow"}}' };
      return okText;
    });
    expect(await provider().send(request)).to.deep.equal({ text: "ok" });
    expect(server.requests).to.have.length(3);
    expect(new Set(server.requests.map((each) => each.body)).size).to.equal(1);
    expect(delays[0]).to.be.within(0.75, 1);
    expect(delays[1]).to.be.within(500, 2500);
  });

  it("retries a stream that ends before [DONE] or a finish_reason", async () => {
    const cut = openAIEventStream([chunk({ content: "partial" })]).replace("data: [DONE]\n\n", "");
    await serve((index) => (index === 0 ? { headers: sseHeaders, body: cut } : okText));
    expect(await provider().send(request)).to.deep.equal({ text: "ok" });
    expect(server.requests[1]!.body).to.equal(server.requests[0]!.body);
  });

  it("maps a 4xx to ProviderRejected with the API's status and message, without retrying", async () => {
    await serve(() => ({
      status: 404,
      headers: jsonHeaders,
      body: '{"error":{"message":"The model `gpt-nope` does not exist","type":"invalid_request_error","code":"model_not_found"}}',
    }));
    const error = await provider()
      .send(request)
      .catch((caught: unknown) => caught);
    expect(error).to.be.instanceOf(ProviderRejected);
    expect(error).to.include({ status: 404, apiMessage: "The model `gpt-nope` does not exist", provider: "openai-compatible" });
    expect(server.requests).to.have.length(1);
  });

  it("times out a stream that stalls midway: the timeout covers the whole reply", async () => {
    await serve(() => ({
      headers: sseHeaders,
      chunks: [`data: ${JSON.stringify(chunk({ content: "partial" }))}\n\n`],
      stall: true,
    }));
    const error = await provider({ timeoutMs: 80, maxRetries: 0 })
      .send(request)
      .catch((caught: unknown) => caught);
    expect(error).to.be.instanceOf(ProviderTimedOut).with.property("attempts", 1);
  });
});
