// Where lowering puts Anthropic cache breakpoints, over random histories (decision 100):
// never on a native `role: "system"` message nor a thinking block; at most four in all;
// 1-hour before 5-minute ones; the tail on the last block of the newest user turn and the
// anchor on the user turn before it; equal histories give equal bodies.

import { expect } from "chai";
import fc from "fast-check";
import {
  type AnthropicMessagesBody,
  type AnthropicModelCapabilities,
  lowerAnthropic,
  type ProviderRequest,
  type RequestMessage,
} from "../../core/providers/index.ts";

const model = "claude-test";
const thinking = { type: "thinking", thinking: "hmm", signature: "sig" };

const text = fc.oneof(fc.constantFrom("", " ", "x"), fc.string({ maxLength: 8 }));
const message: fc.Arbitrary<RequestMessage> = fc.oneof(
  text.map((value) => ({ role: "user" as const, text: value })),
  text.map((value) => ({ role: "system-update" as const, text: value })),
  text.map((value) => ({ role: "summary" as const, text: value })),
  fc.record({ text, calls: fc.nat({ max: 3 }), thinks: fc.boolean() }).map(({ text: value, calls, thinks }) => {
    const toolCalls = Array.from({ length: calls }, (_, i) => ({ id: `c${i}`, name: "read", input: { i } }));
    const blocks = [
      ...(thinks ? [thinking] : []),
      { type: "text", text: value },
      ...toolCalls.map((call) => ({ type: "tool_use", ...call })),
    ];
    return {
      role: "assistant" as const,
      text: value,
      ...(calls > 0 ? { toolCalls } : {}),
      ...(thinks ? { providerContent: { provider: "anthropic", model, blocks } } : {}),
    };
  }),
  fc.nat({ max: 3 }).map((i) => ({ role: "tool" as const, callId: `c${i}`, name: "read", result: `r${i}` })),
);
const histories = fc.array(message, { maxLength: 30 });
const capabilities = fc.record({
  nativeSystemMessages: fc.boolean(),
  maxTokens: fc.constant(1024),
  replaysThinking: fc.boolean(),
});
const ttls = fc.constantFrom("5m", "1h-system", "1h") as fc.Arbitrary<"5m" | "1h-system" | "1h">;

interface Found {
  readonly place: "tools" | "system" | number;
  readonly role?: string;
  readonly block: Record<string, unknown>;
  readonly ttl: string;
}

function breakpointsOf(body: AnthropicMessagesBody): Found[] {
  const found: Found[] = [];
  const look = (place: Found["place"], block: Record<string, unknown>, role?: string) => {
    const control = block.cache_control as { ttl?: string } | undefined;
    if (control !== undefined) found.push({ place, block, ttl: control.ttl ?? "5m", ...(role === undefined ? {} : { role }) });
  };
  for (const tool of body.tools ?? []) look("tools", tool as unknown as Record<string, unknown>);
  for (const block of body.system ?? []) look("system", block as unknown as Record<string, unknown>);
  body.messages.forEach((each, index) => {
    for (const block of each.content) look(index, block as unknown as Record<string, unknown>, each.role);
  });
  return found;
}

function lower(messages: readonly RequestMessage[], caps: AnthropicModelCapabilities, cacheTtl: "5m" | "1h-system" | "1h") {
  const request: ProviderRequest = { provider: "anthropic", model, system: ["PROMPT", "BASELINE"], messages };
  return lowerAnthropic(request, caps, { cacheTtl, tools: [{ name: "read", inputSchema: { type: "object" } }] });
}

describe("Anthropic breakpoints", () => {
  it("never sit on a system message or a thinking block, number at most four, and put 1-hour ones first", () => {
    fc.assert(
      fc.property(histories, capabilities, ttls, (messages, caps, cacheTtl) => {
        const found = breakpointsOf(lower(messages, caps, cacheTtl));
        expect(found.length).to.be.at.most(4);
        for (const each of found) {
          expect(each.role).to.not.equal("system");
          expect(each.block.type).to.not.be.oneOf(["thinking", "redacted_thinking"]);
        }
        const order = found.map((each) => each.ttl);
        expect(order.indexOf("5m") === -1 || order.lastIndexOf("1h") < order.indexOf("5m"), order.join()).to.equal(true);
      }),
      { numRuns: 300 },
    );
  });

  it("put the tail on the last block of the newest user turn and the anchor on the user turn before it", () => {
    fc.assert(
      fc.property(histories, capabilities, ttls, (messages, caps, cacheTtl) => {
        const body = lower(messages, caps, cacheTtl);
        const userTurns = body.messages.flatMap((each, index) => (each.role === "user" ? [index] : []));
        const expected = userTurns.slice(-2).map((index) => [index, body.messages[index]!.content.length - 1]);
        const inMessages = breakpointsOf(body).filter((each) => typeof each.place === "number");
        const actual = inMessages.map((each) => {
          const index = each.place as number;
          return [index, (body.messages[index]!.content as unknown[]).indexOf(each.block)];
        });
        expect(actual).to.deep.equal(expected);
      }),
      { numRuns: 300 },
    );
  });

  it("lower equal histories to equal bodies", () => {
    fc.assert(
      fc.property(histories, capabilities, ttls, (messages, caps, cacheTtl) => {
        const copy = structuredClone(messages);
        expect(JSON.stringify(lower(copy, caps, cacheTtl))).to.equal(JSON.stringify(lower(messages, caps, cacheTtl)));
      }),
      { numRuns: 100 },
    );
  });

  it("read the previous request's entry through the anchor however wide the last turn was", () => {
    const calls = Array.from({ length: 30 }, (_, i) => ({ id: `c${i}`, name: "read", input: { i } }));
    const first: RequestMessage[] = [{ role: "user", text: "read them all" }];
    const second: RequestMessage[] = [
      ...first,
      { role: "assistant", text: "", toolCalls: calls },
      ...calls.map((call) => ({ role: "tool" as const, callId: call.id, name: "read", result: "ok" })),
    ];
    const caps = { nativeSystemMessages: true, maxTokens: 1024 };
    const [a, b] = [lower(first, caps, "5m"), lower(second, caps, "5m")];
    // 30 tool_use blocks and 30 tool_result blocks after the previous tail: beyond the API's 20-block lookback.
    expect(b.messages[0]!.content[0]).to.deep.equal(a.messages[0]!.content[0]);
    expect(b.messages[0]!.content[0]).to.have.property("cache_control");
    expect(b.messages[2]!.content.at(-1)).to.have.property("cache_control");
  });
});
