// Type-level checks: lowered bodies and the reply fixtures of these tests are checked at
// compile time (`tsc --noEmit`) against the official SDK types, imported as types only.
// The runtime assertions just keep each check reachable.

import type Anthropic from "@anthropic-ai/sdk";
import { expect } from "chai";
import type OpenAI from "openai";
import {
  type AnthropicModelCapabilities,
  lowerAnthropic,
  lowerOpenAI,
  type OpenAIModelCapabilities,
  type ProviderRequest,
} from "../../core/providers/index.ts";
import { inEpochRequests, scriptedSteps } from "./conversation.ts";

const tools = [{ name: "read_file", description: "reads a file", inputSchema: { type: "object" as const, properties: {} } }];
const last = (requests: ProviderRequest[]): ProviderRequest => requests.at(-1)!;

describe("Lowered bodies against the SDK types", () => {
  it("an Anthropic body (native and wrapped, with tools) is a MessageCreateParams", () => {
    const request = last(inEpochRequests(scriptedSteps, { startWithSummary: "before" }));
    for (const capabilities of [
      { nativeSystemMessages: true, maxTokens: 1024 },
      { nativeSystemMessages: false, maxTokens: 1024 },
    ] satisfies AnthropicModelCapabilities[]) {
      const body: Anthropic.MessageCreateParamsNonStreaming = lowerAnthropic(request, capabilities, { tools });
      const streaming: Anthropic.MessageCreateParamsStreaming = { ...body, stream: true };
      const messages: Anthropic.MessageParam[] = body.messages;
      expect(streaming.messages).to.equal(messages);
    }
  });

  it("an OpenAI body (developer and wrapped, with tools) is a ChatCompletionCreateParams", () => {
    const request = last(inEpochRequests(scriptedSteps, { startWithSummary: "before" }));
    for (const capabilities of [
      { instructionRole: "developer", systemUpdateRole: "developer", maxTokens: 100 },
      { instructionRole: "system", systemUpdateRole: "wrapped" },
    ] satisfies OpenAIModelCapabilities[]) {
      const body: OpenAI.Chat.ChatCompletionCreateParamsNonStreaming = lowerOpenAI(request, capabilities, { tools });
      const streaming: OpenAI.Chat.ChatCompletionCreateParamsStreaming = { ...body, stream: true };
      const messages: OpenAI.Chat.ChatCompletionMessageParam[] = body.messages;
      expect(streaming.messages).to.equal(messages);
    }
  });
});
