// Owns the pricing table: what one model's tokens cost, per kind of token, as data with
// its source and the date it was read, and the price of one reply's TokenUsage.

import type { TokenUsage } from "../session/provider.ts";

/** US dollars per million tokens of each kind. */
export interface ModelPrice {
  readonly input: number;
  readonly output: number;
  /** Written to the prompt cache with the 5-minute TTL (Anthropic: 1.25 × input). */
  readonly cacheWrite5m: number;
  /** Written with the 1-hour TTL (Anthropic: 2 × input). */
  readonly cacheWrite1h: number;
  /** Read from the prompt cache (Anthropic: 0.1 × input; OpenAI: the model's cached-input price). */
  readonly cacheRead: number;
}

/** One row of the pricing table. */
export interface PriceRow {
  readonly provider: "anthropic" | "openai";
  /** Exact model ids and id prefixes (`claude-opus-4-8` covers `claude-opus-4-8-20260528`). */
  readonly models: readonly string[];
  readonly price: ModelPrice;
  /** Where the figures come from. */
  readonly source: string;
  /** When the source was read (ISO date). */
  readonly date: string;
}

const anthropicSource = "https://platform.claude.com/docs/en/about-claude/pricing";
const openAISource = "https://developers.openai.com/api/docs/pricing";
const read = "2026-12-03";

/** Anthropic's cache multipliers on the input price (prompt-caching docs): write 1.25× (5 min), 2× (1 h), read 0.1×. */
function anthropicPrice(input: number, output: number): ModelPrice {
  return { input, output, cacheWrite5m: input * 1.25, cacheWrite1h: input * 2, cacheRead: input * 0.1 };
}

/** OpenAI caches automatically (prompts from 1,024 tokens): writes cost plain input, reads the cached-input price. */
function openAIPrice(input: number, cachedInput: number, output: number): ModelPrice {
  return { input, output, cacheWrite5m: input, cacheWrite1h: input, cacheRead: cachedInput };
}

/**
 * GPT-5.6 and later (prompt-caching guide): cache writes cost 1.25× the input price, reads
 * the cached-input price (0.1× input). One write price: the only lifetime is 30 minutes.
 */
function openAIWritePrice(input: number, output: number): ModelPrice {
  return { input, output, cacheWrite5m: input * 1.25, cacheWrite1h: input * 1.25, cacheRead: input * 0.1 };
}
const openAICachingGuide = "https://developers.openai.com/api/docs/guides/prompt-caching";

/** The default pricing table. Append or prepend rows for other models; the first matching row wins. */
export const pricingTable: readonly PriceRow[] = [
  {
    provider: "anthropic",
    models: ["claude-opus-5", "claude-opus-4-8", "claude-opus-4-7", "claude-opus-4-6", "claude-opus-4-5"],
    price: anthropicPrice(5, 25),
    source: anthropicSource,
    date: read,
  },
  {
    provider: "anthropic",
    models: ["claude-sonnet-4-5", "claude-sonnet-4-6"],
    price: anthropicPrice(3, 15),
    source: anthropicSource,
    date: read,
  },
  { provider: "anthropic", models: ["claude-haiku-4-5"], price: anthropicPrice(1, 5), source: anthropicSource, date: read },
  // The three GPT-5.6 sizes; `gpt-5.6` alone (last: its prefix matches the others) is priced as Terra, whose
  // input : output ratio (1 : 6) and cache multipliers are those of the other two.
  {
    provider: "openai",
    models: ["gpt-5.6-sol"],
    price: openAIWritePrice(5, 30),
    source: `${openAISource}; ${openAICachingGuide}`,
    date: "2026-12-04",
  },
  {
    provider: "openai",
    models: ["gpt-5.6-luna"],
    price: openAIWritePrice(1, 6),
    source: `${openAISource}; ${openAICachingGuide}`,
    date: "2026-12-04",
  },
  {
    provider: "openai",
    models: ["gpt-5.6-terra", "gpt-5.6"],
    price: openAIWritePrice(2.5, 15),
    source: `${openAISource}; ${openAICachingGuide}`,
    date: "2026-12-04",
  },
  { provider: "openai", models: ["gpt-5-mini"], price: openAIPrice(0.25, 0.025, 2), source: openAISource, date: read },
  { provider: "openai", models: ["gpt-5"], price: openAIPrice(1.25, 0.125, 10), source: openAISource, date: read },
  { provider: "openai", models: ["gpt-4.1"], price: openAIPrice(2, 0.5, 8), source: openAISource, date: read },
];

/** The row pricing `model`: the first whose id equals it or is a prefix of it followed by `-`. */
export function priceOf(model: string, table: readonly PriceRow[] = pricingTable): PriceRow | undefined {
  return table.find((row) => row.models.some((id) => model === id || model.startsWith(`${id}-`)));
}

/** US dollars one reply's usage costs at `price`. 1-hour cache writes (when reported) at the 1-hour rate. */
export function costOf(usage: TokenUsage, price: ModelPrice): number {
  const longWrites = Math.min(usage.cacheWrite1h ?? 0, usage.cacheWrite);
  const perToken =
    usage.input * price.input +
    usage.output * price.output +
    usage.cacheRead * price.cacheRead +
    (usage.cacheWrite - longWrites) * price.cacheWrite5m +
    longWrites * price.cacheWrite1h;
  return perToken / 1_000_000;
}
