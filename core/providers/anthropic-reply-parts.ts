// Owns what an Anthropic reply adds to a ProviderReply beyond text and tool calls: the
// token usage in the API's field names, and the reply's blocks kept as provider content
// when they include thinking that must be sent back unchanged.

import type { ProviderReply, TokenUsage, ToolCall } from "../session/provider.ts";

/** `usage` as the Messages API reports it; every field may be absent or null in a stream event. */
export interface AnthropicUsage {
  readonly input_tokens?: number | null;
  readonly output_tokens?: number | null;
  readonly cache_creation_input_tokens?: number | null;
  readonly cache_read_input_tokens?: number | null;
  readonly cache_creation?: { readonly ephemeral_5m_input_tokens?: number; readonly ephemeral_1h_input_tokens?: number } | null;
}

/** Later counts replace earlier ones; absent or null ones keep them. */
export function mergeUsage(earlier: AnthropicUsage, later: AnthropicUsage): AnthropicUsage {
  const merged: Record<string, unknown> = { ...earlier };
  for (const [field, value] of Object.entries(later)) if (value !== null && value !== undefined) merged[field] = value;
  return merged as AnthropicUsage;
}

const count = (value: unknown): number => (typeof value === "number" && Number.isFinite(value) && value >= 0 ? value : 0);

/** The provider-neutral usage of an Anthropic `usage` object. */
export function anthropicTokenUsage(usage: AnthropicUsage): TokenUsage {
  const oneHour = usage.cache_creation?.ephemeral_1h_input_tokens;
  return {
    input: count(usage.input_tokens),
    cacheRead: count(usage.cache_read_input_tokens),
    cacheWrite: count(usage.cache_creation_input_tokens),
    ...(typeof oneHour === "number" ? { cacheWrite1h: count(oneHour) } : {}),
    output: count(usage.output_tokens),
  };
}

/** One content block of a reply, in the shape a request takes it back. */
export type ReplyBlock =
  | { readonly type: "text"; readonly text: string }
  | { readonly type: "tool_use"; readonly id: string; readonly name: string; readonly input: unknown }
  | { readonly type: "thinking"; readonly thinking: string; readonly signature: string }
  | { readonly type: "redacted_thinking"; readonly data: string };

/**
 * The ProviderReply of a reply's blocks: text joined, tool calls in order, and — when
 * there is thinking — all blocks as provider content (its `model` is filled in by the
 * adapter, which knows the request).
 */
export function replyOf(blocks: readonly ReplyBlock[], usage: TokenUsage | undefined): ProviderReply {
  let text = "";
  const toolCalls: ToolCall[] = [];
  for (const block of blocks) {
    if (block.type === "text") text += block.text;
    else if (block.type === "tool_use") toolCalls.push({ id: block.id, name: block.name, input: block.input });
  }
  const hasThinking = blocks.some((block) => block.type === "thinking" || block.type === "redacted_thinking");
  return {
    text,
    ...(toolCalls.length === 0 ? {} : { toolCalls }),
    ...(usage === undefined ? {} : { usage }),
    ...(hasThinking ? { providerContent: { provider: "anthropic", model: "", blocks } } : {}),
  };
}
