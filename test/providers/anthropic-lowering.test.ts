// Golden tests of lowering to the Anthropic Messages API: one behaviour per `it`.

import { expect } from "chai";
import {
  type AnthropicModelCapabilities,
  anthropicCapabilities,
  anthropicModels,
  emptyReplyMarker,
  lowerAnthropic,
  type ProviderRequest,
  type RequestMessage,
} from "../../core/providers/index.ts";

const wrapped: AnthropicModelCapabilities = { nativeSystemMessages: false, maxTokens: 1024 };
const native: AnthropicModelCapabilities = { nativeSystemMessages: true, maxTokens: 1024 };
const ephemeral = { type: "ephemeral" } as const;

function request(messages: RequestMessage[], system: string[] = ["PROMPT", "BASELINE"]): ProviderRequest {
  return { provider: "anthropic", model: "claude-test", system, messages };
}

describe("Anthropic lowering", () => {
  it("puts the host system prompt and the Baseline in separate system blocks, the Baseline holding a cache breakpoint", () => {
    const body = lowerAnthropic(request([{ role: "user", text: "hi" }]), wrapped);
    expect(body).to.deep.equal({
      model: "claude-test",
      max_tokens: 1024,
      system: [
        { type: "text", text: "PROMPT" },
        { type: "text", text: "BASELINE", cache_control: ephemeral },
      ],
      messages: [{ role: "user", content: [{ type: "text", text: "hi", cache_control: ephemeral }] }],
    });
  });

  it("never sends an empty text block: an empty reply becomes a fixed marker, a tool-call-only reply has no text block", () => {
    const body = lowerAnthropic(
      request([
        { role: "user", text: "hi" },
        { role: "assistant", text: "" },
        { role: "user", text: "and?" },
        { role: "assistant", text: "", toolCalls: [{ id: "t1", name: "read", input: {} }] },
        { role: "tool", callId: "t1", name: "read", result: "ok" },
      ]),
      wrapped,
    );
    expect(body.messages[1]).to.deep.equal({ role: "assistant", content: [{ type: "text", text: emptyReplyMarker }] });
    expect(body.messages[3]).to.deep.equal({
      role: "assistant",
      content: [{ type: "tool_use", id: "t1", name: "read", input: {} }],
    });
  });

  it("sends the Baseline alone when there is no host system prompt, and leaves out empty system text", () => {
    expect(lowerAnthropic(request([{ role: "user", text: "hi" }], ["BASELINE"]), wrapped).system).to.deep.equal([
      { type: "text", text: "BASELINE", cache_control: ephemeral },
    ]);
    expect(lowerAnthropic(request([{ role: "user", text: "hi" }], [""]), wrapped)).not.to.have.property("system");
  });

  it("serializes keys in cache order: model, max_tokens, tools, system, messages", () => {
    const body = lowerAnthropic(request([{ role: "user", text: "hi" }]), wrapped, {
      tools: [{ name: "grep", description: "search", inputSchema: { type: "object", properties: {} } }],
    });
    expect(Object.keys(body)).to.deep.equal(["model", "max_tokens", "tools", "system", "messages"]);
    expect(body.tools).to.deep.equal([{ name: "grep", description: "search", input_schema: { type: "object", properties: {} } }]);
  });

  it("wraps a Mid-Conversation System Message for a model without native support as an escaped <system-update> in the same user turn", () => {
    const body = lowerAnthropic(
      request([
        { role: "user", text: "go" },
        { role: "system-update", text: 'date: <today> & "now"' },
      ]),
      wrapped,
    );
    expect(body.messages).to.deep.equal([
      {
        role: "user",
        content: [
          { type: "text", text: "go" },
          { type: "text", text: '<system-update>date: &lt;today&gt; &amp; "now"</system-update>', cache_control: ephemeral },
        ],
      },
    ]);
  });

  it("lowers a Mid-Conversation System Message to a native system message after a user turn for a model that supports it", () => {
    const body = lowerAnthropic(
      request([
        { role: "user", text: "go" },
        { role: "system-update", text: "cwd: /b" },
      ]),
      native,
    );
    expect(body.messages).to.deep.equal([
      { role: "user", content: [{ type: "text", text: "go", cache_control: ephemeral }] },
      { role: "system", content: [{ type: "text", text: "cwd: /b" }] },
    ]);
  });

  it("keeps a native system message native once the assistant turn follows it", () => {
    const body = lowerAnthropic(
      request([
        { role: "user", text: "go" },
        { role: "system-update", text: "cwd: /b" },
        { role: "assistant", text: "ok" },
      ]),
      native,
    );
    expect(body.messages.map((message) => message.role)).to.deep.equal(["user", "system", "assistant"]);
  });

  it("lowers tool calls to tool_use blocks and results to leading tool_result blocks, a native update following the results", () => {
    const body = lowerAnthropic(
      request([
        { role: "user", text: "look" },
        { role: "assistant", text: "", toolCalls: [{ id: "t1", name: "read", input: { path: "a" } }] },
        { role: "tool", callId: "t1", name: "read", result: "A" },
        { role: "system-update", text: "cwd: /b" },
      ]),
      native,
    );
    expect(body.messages).to.deep.equal([
      { role: "user", content: [{ type: "text", text: "look", cache_control: ephemeral }] },
      { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "read", input: { path: "a" } }] },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "t1", content: "A", cache_control: ephemeral }] },
      { role: "system", content: [{ type: "text", text: "cwd: /b" }] },
    ]);
  });

  it("merges parallel tool results and a wrapped update into one user turn", () => {
    const body = lowerAnthropic(
      request([
        { role: "user", text: "look" },
        {
          role: "assistant",
          text: "Reading both.",
          toolCalls: [
            { id: "t1", name: "read", input: {} },
            { id: "t2", name: "read", input: {} },
          ],
        },
        { role: "tool", callId: "t1", name: "read", result: "A" },
        { role: "tool", callId: "t2", name: "read", result: "B" },
        { role: "system-update", text: "cwd: /b" },
      ]),
      wrapped,
    );
    expect(body.messages.slice(1)).to.deep.equal([
      {
        role: "assistant",
        content: [
          { type: "text", text: "Reading both." },
          { type: "tool_use", id: "t1", name: "read", input: {} },
          { type: "tool_use", id: "t2", name: "read", input: {} },
        ],
      },
      {
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: "t1", content: "A" },
          { type: "tool_result", tool_use_id: "t2", content: "B" },
          { type: "text", text: "<system-update>cwd: /b</system-update>", cache_control: ephemeral },
        ],
      },
    ]);
  });

  it("never places an update between a tool call and its result: the result leads the user turn", () => {
    const body = lowerAnthropic(
      request([
        { role: "user", text: "look" },
        { role: "assistant", text: "", toolCalls: [{ id: "t1", name: "read", input: {} }] },
        { role: "system-update", text: "cwd: /b" },
        { role: "tool", callId: "t1", name: "read", result: "A" },
      ]),
      native,
    );
    expect(body.messages.at(-1)).to.deep.equal({
      role: "user",
      content: [
        { type: "tool_result", tool_use_id: "t1", content: "A" },
        { type: "text", text: "<system-update>cwd: /b</system-update>", cache_control: ephemeral },
      ],
    });
  });

  it("wraps an update that follows an assistant turn directly, since a native one must follow a user turn", () => {
    const body = lowerAnthropic(
      request([
        { role: "user", text: "hi" },
        { role: "assistant", text: "hello" },
        { role: "system-update", text: "cwd: /b" },
      ]),
      native,
    );
    expect(body.messages.at(-1)).to.deep.equal({
      role: "user",
      content: [{ type: "text", text: "<system-update>cwd: /b</system-update>", cache_control: ephemeral }],
    });
  });

  it("wraps an update that user input follows (after an unanswered request), since a native one must precede an assistant turn", () => {
    const body = lowerAnthropic(
      request([
        { role: "user", text: "one" },
        { role: "system-update", text: "cwd: /b" },
        { role: "user", text: "two" },
      ]),
      native,
    );
    expect(body.messages).to.deep.equal([
      {
        role: "user",
        content: [
          { type: "text", text: "one" },
          { type: "text", text: "<system-update>cwd: /b</system-update>" },
          { type: "text", text: "two", cache_control: ephemeral },
        ],
      },
    ]);
  });

  it("never puts two native system messages next to each other", () => {
    const body = lowerAnthropic(
      request([
        { role: "user", text: "one" },
        { role: "system-update", text: "first" },
        { role: "system-update", text: "second" },
      ]),
      native,
    );
    expect(body.messages.map((message) => message.role)).to.deep.equal(["user", "system"]);
    expect(body.messages[0]!.content.at(-1)).to.deep.equal({
      type: "text",
      text: "<system-update>first</system-update>",
      cache_control: ephemeral,
    });
  });

  it("lowers a compaction summary to an escaped <summary> block opening the first user turn", () => {
    const body = lowerAnthropic(
      request([
        { role: "summary", text: "we fixed <x>" },
        { role: "user", text: "next" },
      ]),
      wrapped,
    );
    expect(body.messages).to.deep.equal([
      {
        role: "user",
        content: [
          { type: "text", text: "<summary>we fixed &lt;x&gt;</summary>" },
          { type: "text", text: "next", cache_control: ephemeral },
        ],
      },
    ]);
  });

  it("declares native system messages for the models the mid-conversation system messages page lists, and no others", () => {
    const isNative = (model: string) => anthropicCapabilities(model).nativeSystemMessages;
    for (const model of [
      "claude-opus-4-8",
      "claude-opus-4-8-20260528",
      "claude-opus-4-10",
      "claude-opus-5",
      "claude-opus-5-5",
      "claude-sonnet-5-5",
      "claude-haiku-5-5",
      "claude-fable-5",
      "claude-fable-5-1",
      "claude-fable-5-2",
      "claude-mythos-5",
      "claude-mythos-5-1",
      "claude-mythos-5-2",
    ]) {
      expect(isNative(model), model).to.equal(true);
    }
    for (const model of [
      "claude-opus-4-7",
      "claude-opus-4-20250514",
      "claude-opus-4-5-20251101",
      "claude-sonnet-4-6",
      "claude-sonnet-5",
      "claude-haiku-4-5",
      "claude-mythos-preview",
    ]) {
      expect(isNative(model), model).to.equal(false);
    }
  });

  it("lets a host's capability rows extend the default table", () => {
    const table = [
      ...anthropicModels,
      { model: /^claude-sonnet-5/, capabilities: { nativeSystemMessages: true, maxTokens: 64_000 } },
    ];
    expect(anthropicCapabilities("claude-sonnet-5", table)).to.deep.equal({
      nativeSystemMessages: true,
      maxTokens: 64_000,
      replaysThinking: true,
      cacheMinimumTokens: 1024,
    });
    expect(anthropicCapabilities("claude-opus-4-8", table)).to.deep.equal({
      nativeSystemMessages: true,
      maxTokens: 8192,
      replaysThinking: true,
      cacheMinimumTokens: 1024,
    });
  });
});
