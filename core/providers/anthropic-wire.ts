// Owns the Messages API's rules on single values that lowering must honour whatever the
// history holds: tool ids of the documented pattern, tool input that is an object, no
// whitespace-only text, provider content replayed unchanged, and the cache TTL option.
// Each rule maps deterministically, so a request lowered twice gives the same bytes and
// the prompt-cache prefix holds; history keeps the original values.

import { createHash } from "node:crypto";
import type { ProviderContent, RequestMessage } from "../session/provider.ts";

/** The pattern the API requires of `tool_use.id` and `tool_result.tool_use_id`. */
export const anthropicToolIdPattern = /^[a-zA-Z0-9_-]+$/;

/**
 * The id to send for a tool call id from history. An id the API accepts is sent as it
 * is; any other (an OpenAI-compatible server's `functions.read_file:0`, an empty id) is
 * mapped to its allowed characters, others replaced by `_`, plus a hash of the whole
 * original, so two different ids never map to the same one and the same id always maps
 * the same way.
 */
export function anthropicToolId(id: string): string {
  if (anthropicToolIdPattern.test(id)) return id;
  const readable = id.replace(/[^a-zA-Z0-9_-]/g, "_").slice(0, 40);
  const digest = createHash("sha256").update(id, "utf8").digest("hex").slice(0, 16);
  return `${readable === "" ? "id" : readable}_${digest}`;
}

/**
 * The input to send for a tool call: the API's schema requires an object. `null` or an
 * absent input (arguments `"null"` or none) becomes `{}`; any other non-object (an array,
 * a string, a number) is carried as `{ "value": … }`.
 */
export function anthropicToolInput(input: unknown): Record<string, unknown> {
  if (input === null || input === undefined) return {};
  if (typeof input === "object" && !Array.isArray(input)) return input as Record<string, unknown>;
  return { value: input };
}

/** Whether text is empty or only whitespace: the API rejects such text blocks ("must contain non-whitespace text"). */
export function isBlankText(text: string): boolean {
  return text.trim() === "";
}

/** Block types that must be passed back unchanged and can never hold a cache breakpoint. */
const replayOnlyTypes: ReadonlySet<string> = new Set(["thinking", "redacted_thinking"]);

/** Whether a stored block is one the API needs back byte for byte (thinking, redacted thinking). */
export function isReplayOnlyBlock(block: unknown): boolean {
  return typeof block === "object" && block !== null && replayOnlyTypes.has(String((block as { type?: unknown }).type));
}

/**
 * The stored provider content to lower for an assistant message of history, or
 * `undefined` to lower its text and tool calls: only content that came from the
 * Anthropic API for the same model, and only when the model's capabilities say to
 * replay it (a signature belongs to the model that wrote it).
 */
export function replayableContent(
  message: Extract<RequestMessage, { role: "assistant" }>,
  model: string,
  replaysThinking: boolean,
): ProviderContent | undefined {
  const content = message.providerContent;
  if (!replaysThinking || content === undefined) return undefined;
  if (content.provider !== "anthropic" || content.model !== model) return undefined;
  return content.blocks.some(isReplayOnlyBlock) ? content : undefined;
}

/**
 * Prompt-cache lifetime of the two breakpoints lowering places: `"5m"` (default) both
 * five minutes; `"1h-system"` the Baseline's for one hour and the moving one five
 * minutes; `"1h"` both one hour. The API requires 1-hour entries before 5-minute ones,
 * and the Baseline comes first, so every option is valid.
 */
export type AnthropicCacheTtl = "5m" | "1h-system" | "1h";

/** The `cache_control` of a breakpoint at `place` under `ttl`. */
export function cacheControlFor(ttl: AnthropicCacheTtl, place: "system" | "messages"): { type: "ephemeral"; ttl?: "1h" } {
  const isLong = ttl === "1h" || (ttl === "1h-system" && place === "system");
  return isLong ? { type: "ephemeral", ttl: "1h" } : { type: "ephemeral" };
}
