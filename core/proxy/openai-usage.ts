// Owns the token usage of the OpenAI wires as the proxy reports it: the Responses
// API's `usage` (`input_tokens` counts the cached ones too) and Chat Completions'.

import { openAITokenUsage } from "../providers/openai-reply.ts";
import type { TokenUsage } from "../session/provider.ts";

const count = (value: unknown): number => (typeof value === "number" && Number.isFinite(value) && value >= 0 ? value : 0);

/** The usage of a Responses API response object, if it reports one. */
export function openAIResponsesUsage(response: unknown): TokenUsage | undefined {
  const usage = (response as { usage?: unknown } | null | undefined)?.usage as
    | { input_tokens?: unknown; output_tokens?: unknown; input_tokens_details?: { cached_tokens?: unknown } | null }
    | null
    | undefined;
  if (usage === null || typeof usage !== "object") return undefined;
  const input = count(usage.input_tokens);
  const cached = Math.min(count(usage.input_tokens_details?.cached_tokens), input);
  return { input: input - cached, cacheRead: cached, cacheWrite: 0, output: count(usage.output_tokens) };
}

/** The usage of a Chat Completions response or chunk, if it reports one. */
export const chatCompletionsUsage = (json: unknown): TokenUsage | undefined => openAITokenUsage(json);
