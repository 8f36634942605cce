// The cache-prefix property of lowering: within a Context Epoch, each lowered request
// extends the previous one (see core/providers/prefix-extension.ts for the definition).

import { expect } from "chai";
import fc from "fast-check";
import {
  type AnthropicModelCapabilities,
  extendsAnthropicPrefix,
  extendsOpenAIPrefix,
  lowerAnthropic,
  lowerOpenAI,
  type OpenAIModelCapabilities,
  type ProviderRequest,
} from "../../core/providers/index.ts";
import { inEpochRequests, type ScriptedStep, scriptedSteps } from "./conversation.ts";

const anthropicConfigurations: Record<string, AnthropicModelCapabilities> = {
  "wrapped updates": { nativeSystemMessages: false, maxTokens: 1024 },
  "native system messages": { nativeSystemMessages: true, maxTokens: 1024 },
};
const openAIConfigurations: Record<string, OpenAIModelCapabilities> = {
  "wrapped updates": { instructionRole: "system", systemUpdateRole: "wrapped" },
  "developer messages": { instructionRole: "developer", systemUpdateRole: "developer" },
  "explicit cache breakpoints": { instructionRole: "developer", systemUpdateRole: "developer", explicitCacheBreakpoints: true },
  "explicit cache breakpoints, wrapped updates": {
    instructionRole: "system",
    systemUpdateRole: "wrapped",
    explicitCacheBreakpoints: true,
  },
};
const tools = [{ name: "read_file", inputSchema: { type: "object" as const } }];

const step = fc.record({
  input: fc.string({ maxLength: 12 }),
  update: fc.option(fc.string({ maxLength: 12 }), { nil: undefined }),
  reply: fc.string({ maxLength: 12 }),
  toolCalls: fc.nat({ max: 3 }),
});
const scripts = fc.tuple(fc.array(step, { minLength: 2, maxLength: 25 }), fc.boolean());

function requestsOf(steps: readonly ScriptedStep[], startWithSummary: boolean): ProviderRequest[] {
  return inEpochRequests(steps, startWithSummary ? { startWithSummary: "earlier work <done>" } : {});
}

function everyRequestExtendsThePrevious<Body>(
  requests: readonly ProviderRequest[],
  lower: (request: ProviderRequest) => Body,
  extendsPrefix: (previous: Body, next: Body) => boolean,
): boolean {
  const bodies = requests.map(lower);
  return bodies.every((body, index) => index === 0 || extendsPrefix(bodies[index - 1]!, body));
}

describe("Prefix extension within a Context Epoch", () => {
  for (const [name, capabilities] of Object.entries(anthropicConfigurations)) {
    it(`every lowered Anthropic request extends the previous one (${name})`, () => {
      const lower = (request: ProviderRequest) => lowerAnthropic(request, capabilities, { tools });
      expect(everyRequestExtendsThePrevious(inEpochRequests(scriptedSteps), lower, extendsAnthropicPrefix)).to.equal(true);
      fc.assert(
        fc.property(scripts, ([steps, summary]) =>
          everyRequestExtendsThePrevious(requestsOf(steps, summary), lower, extendsAnthropicPrefix),
        ),
      );
    });
  }

  for (const [name, capabilities] of Object.entries(openAIConfigurations)) {
    it(`every lowered OpenAI request extends the previous one (${name})`, () => {
      const lower = (request: ProviderRequest) => lowerOpenAI(request, capabilities, { tools });
      expect(everyRequestExtendsThePrevious(inEpochRequests(scriptedSteps), lower, extendsOpenAIPrefix)).to.equal(true);
      fc.assert(
        fc.property(scripts, ([steps, summary]) =>
          everyRequestExtendsThePrevious(requestsOf(steps, summary), lower, extendsOpenAIPrefix),
        ),
      );
    });
  }

  it("the moving Anthropic breakpoints are the one byte difference between consecutive requests", () => {
    const capabilities = anthropicConfigurations["native system messages"]!;
    const bodies = inEpochRequests(scriptedSteps).map((request) => lowerAnthropic(request, capabilities));
    const marker = ',"cache_control":{"type":"ephemeral"}';
    bodies.slice(1).forEach((body, index) => {
      const previous = JSON.stringify(bodies[index]!.messages).slice(0, -1);
      const next = JSON.stringify(body.messages);
      expect(next.replaceAll(marker, "").startsWith(previous.replaceAll(marker, "")), `request ${index + 1}`).to.equal(true);
      // The anchor sits where the previous request put its tail.
      const tailOf = (messages: readonly { content: readonly object[] }[]) =>
        messages.flatMap((message, m) => message.content.flatMap((block, b) => ("cache_control" in block ? [[m, b]] : [])));
      const previousTail = tailOf(bodies[index]!.messages).at(-1);
      expect(tailOf(body.messages)[0], `request ${index + 1}`).to.deep.equal(previousTail);
    });
  });

  it("a changed system field is not an extension even when messages are", () => {
    const capabilities = anthropicConfigurations["wrapped updates"]!;
    const [first, second] = inEpochRequests(scriptedSteps).map((request) => lowerAnthropic(request, capabilities));
    expect(extendsAnthropicPrefix(first!, { ...second!, system: [{ type: "text", text: "changed" }] })).to.equal(false);
    const openAI = inEpochRequests(scriptedSteps).map((request) =>
      lowerOpenAI(request, openAIConfigurations["wrapped updates"]!),
    );
    expect(extendsOpenAIPrefix(openAI[0]!, { ...openAI[1]!, max_completion_tokens: 1 })).to.equal(false);
  });

  it("user input added right after an unanswered request merges into its user turn, which is not an extension", () => {
    const unanswered: ProviderRequest = {
      provider: "test",
      model: "m",
      system: ["BASELINE"],
      messages: [{ role: "user", text: "one" }],
    };
    const retriedWithMore: ProviderRequest = { ...unanswered, messages: [...unanswered.messages, { role: "user", text: "two" }] };
    const capabilities = anthropicConfigurations["wrapped updates"]!;
    expect(
      extendsAnthropicPrefix(lowerAnthropic(unanswered, capabilities), lowerAnthropic(retriedWithMore, capabilities)),
    ).to.equal(false);
    const openAI = openAIConfigurations["wrapped updates"]!;
    expect(extendsOpenAIPrefix(lowerOpenAI(unanswered, openAI), lowerOpenAI(retriedWithMore, openAI))).to.equal(false);
  });
});
