// Golden tests of lowering to OpenAI Chat Completions: one behaviour per `it`.

import { expect } from "chai";
import {
  lowerOpenAI,
  type OpenAIModelCapabilities,
  openAICapabilities,
  openAIModels,
  type ProviderRequest,
  type RequestMessage,
} from "../../core/providers/index.ts";

const compatible: OpenAIModelCapabilities = { instructionRole: "system", systemUpdateRole: "wrapped" };
const developer: OpenAIModelCapabilities = { instructionRole: "developer", systemUpdateRole: "developer" };

function request(messages: RequestMessage[], system: string[] = ["PROMPT", "BASELINE"]): ProviderRequest {
  return { provider: "openai", model: "gpt-test", system, messages };
}

describe("OpenAI lowering", () => {
  it("joins the host system prompt and the Baseline into one leading system message", () => {
    expect(lowerOpenAI(request([{ role: "user", text: "hi" }]), compatible)).to.deep.equal({
      model: "gpt-test",
      messages: [
        { role: "system", content: "PROMPT\n\nBASELINE" },
        { role: "user", content: "hi" },
      ],
    });
  });

  it("uses the developer role for the leading instructions when the model declares it", () => {
    expect(lowerOpenAI(request([{ role: "user", text: "hi" }], ["BASELINE"]), developer).messages[0]).to.deep.equal({
      role: "developer",
      content: "BASELINE",
    });
  });

  it("wraps a Mid-Conversation System Message as escaped <system-update> text in the same user message by default", () => {
    const body = lowerOpenAI(
      request([
        { role: "user", text: "go" },
        { role: "system-update", text: "date: <today> & more" },
      ]),
      compatible,
    );
    expect(body.messages.at(-1)).to.deep.equal({
      role: "user",
      content: "go\n\n<system-update>date: &lt;today&gt; &amp; more</system-update>",
    });
  });

  it("lowers a Mid-Conversation System Message to a mid-conversation developer message when the model supports it", () => {
    const body = lowerOpenAI(
      request([
        { role: "user", text: "go" },
        { role: "system-update", text: "cwd: /b" },
        { role: "assistant", text: "ok" },
      ]),
      developer,
    );
    expect(body.messages).to.deep.equal([
      { role: "developer", content: "PROMPT\n\nBASELINE" },
      { role: "user", content: "go" },
      { role: "developer", content: "cwd: /b" },
      { role: "assistant", content: "ok" },
    ]);
  });

  it("lowers tool calls to tool_calls with JSON string arguments and results to tool messages, a wrapped update after them", () => {
    const body = lowerOpenAI(
      request([
        { role: "user", text: "look" },
        {
          role: "assistant",
          text: "",
          toolCalls: [
            { id: "c1", name: "read", input: { path: "a", line: 2 } },
            { id: "c2", name: "grep", input: { pattern: "x" } },
          ],
        },
        { role: "tool", callId: "c1", name: "read", result: "A" },
        { role: "tool", callId: "c2", name: "grep", result: "B" },
        { role: "system-update", text: "cwd: /b" },
      ]),
      compatible,
    );
    expect(body.messages.slice(2)).to.deep.equal([
      {
        role: "assistant",
        content: null,
        tool_calls: [
          { id: "c1", type: "function", function: { name: "read", arguments: '{"path":"a","line":2}' } },
          { id: "c2", type: "function", function: { name: "grep", arguments: '{"pattern":"x"}' } },
        ],
      },
      { role: "tool", tool_call_id: "c1", content: "A" },
      { role: "tool", tool_call_id: "c2", content: "B" },
      { role: "user", content: "<system-update>cwd: /b</system-update>" },
    ]);
  });

  it("keeps user-side text that arrives while tool results are outstanding until after the last result", () => {
    const body = lowerOpenAI(
      request([
        { role: "user", text: "look" },
        { role: "assistant", text: "Reading.", toolCalls: [{ id: "c1", name: "read", input: {} }] },
        { role: "system-update", text: "cwd: /b" },
        { role: "tool", callId: "c1", name: "read", result: "A" },
      ]),
      developer,
    );
    expect(body.messages.slice(2).map((message) => message.role)).to.deep.equal(["assistant", "tool", "developer"]);
  });

  it("lowers a compaction summary to escaped <summary> text opening the first user message", () => {
    const body = lowerOpenAI(
      request([
        { role: "summary", text: "we fixed <x>" },
        { role: "user", text: "next" },
      ]),
      compatible,
    );
    expect(body.messages.at(-1)).to.deep.equal({ role: "user", content: "<summary>we fixed &lt;x&gt;</summary>\n\nnext" });
  });

  it("declares tools and max_completion_tokens when configured, in a fixed key order", () => {
    const body = lowerOpenAI(
      request([{ role: "user", text: "hi" }]),
      { ...compatible, maxTokens: 500 },
      {
        tools: [{ name: "grep", inputSchema: { type: "object", properties: { pattern: { type: "string" } } } }],
      },
    );
    expect(Object.keys(body)).to.deep.equal(["model", "tools", "max_completion_tokens", "messages"]);
    expect(body.tools).to.deep.equal([
      {
        type: "function",
        function: { name: "grep", parameters: { type: "object", properties: { pattern: { type: "string" } } } },
      },
    ]);
  });

  it("wraps updates for every model unless a capability table declares otherwise; openAIModels declares OpenAI's hosted models", () => {
    expect(openAICapabilities("gpt-5").systemUpdateRole).to.equal("wrapped");
    expect(openAICapabilities("gpt-5.1", openAIModels)).to.deep.equal({
      instructionRole: "developer",
      systemUpdateRole: "developer",
      promptCacheKey: true,
      streamUsage: true,
    });
    expect(openAICapabilities("gpt-4o-mini", openAIModels)).to.deep.equal({
      instructionRole: "system",
      systemUpdateRole: "system",
      promptCacheKey: true,
      streamUsage: true,
    });
    expect(openAICapabilities("qwen3-8b", openAIModels)).to.deep.equal({
      instructionRole: "system",
      systemUpdateRole: "wrapped",
    });
  });

  describe("explicit prompt-cache breakpoints (gpt-5.6 and later)", () => {
    const marked = (text: string) => [{ type: "text", text, prompt_cache_breakpoint: { mode: "explicit" } }];

    it("declares them for gpt-5.6 and later only", () => {
      for (const model of ["gpt-5.6", "gpt-5.6-terra", "gpt-5.6-sol-2026-06-26", "gpt-5.10", "gpt-6-sol"]) {
        expect(openAICapabilities(model, openAIModels).explicitCacheBreakpoints, model).to.equal(true);
      }
      for (const model of ["gpt-5", "gpt-5.5", "gpt-5-mini", "gpt-5.1", "gpt-4.1", "o3"]) {
        expect(openAICapabilities(model, openAIModels).explicitCacheBreakpoints, model).to.not.equal(true);
      }
    });

    it("asks for explicit mode, never sends prompt_cache_retention, and marks the Baseline and each place a request ended", () => {
      const capabilities = openAICapabilities("gpt-5.6-terra", openAIModels);
      const body = lowerOpenAI(
        {
          ...request([
            { role: "user", text: "look" },
            { role: "assistant", text: "", toolCalls: [{ id: "t1", name: "read", input: {} }] },
            { role: "tool", callId: "t1", name: "read", result: "A" },
            { role: "system-update", text: "cwd: /b" },
            { role: "assistant", text: "done" },
            { role: "user", text: "next" },
          ]),
          sessionId: "s-1",
        },
        capabilities,
      );
      expect(Object.keys(body)).to.deep.equal(["model", "prompt_cache_key", "prompt_cache_options", "messages"]);
      expect(body.prompt_cache_options).to.deep.equal({ mode: "explicit" });
      expect(body).to.not.have.property("prompt_cache_retention");
      expect(body.messages).to.deep.equal([
        { role: "developer", content: marked("PROMPT\n\nBASELINE") },
        { role: "user", content: marked("look") },
        {
          role: "assistant",
          content: null,
          tool_calls: [{ id: "t1", type: "function", function: { name: "read", arguments: "{}" } }],
        },
        { role: "tool", tool_call_id: "t1", content: "A" },
        { role: "developer", content: marked("cwd: /b") },
        { role: "assistant", content: "done" },
        { role: "user", content: marked("next") },
      ]);
    });

    it("sends no breakpoint and no options to a model without them", () => {
      const body = lowerOpenAI(request([{ role: "user", text: "hi" }]), openAICapabilities("gpt-5", openAIModels));
      expect(body).to.not.have.property("prompt_cache_options");
      expect(JSON.stringify(body)).to.not.include("prompt_cache_breakpoint");
    });
  });
});
