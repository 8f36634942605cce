// Owns `cacheFigures`: what one request reads from and writes to the provider's prompt
// cache, by the cache model (`explainPrefix` with a model), for the terminal and the page.

import type { ProviderRequest } from "../../core/index.ts";
import { explainPrefix, replayCache } from "../../core/providers.ts";

/** A request's cache figures on its session's model: tokens estimated (about four characters each). */
export interface CacheFigures {
  /** The model whose rules and prices apply. */
  readonly model: string;
  readonly read: number;
  readonly written: number;
  readonly uncached: number;
  /** Dollars at the pricing table's row for the model, when it has one. */
  readonly usd?: number;
  /** What the previous request cached that this one did not read, and why. */
  readonly miss?: { readonly reason: string; readonly tokens: number };
}

/** The API whose cache rules a model follows, or `undefined` for a model of neither (a scripted one). */
function apiOf(model: string): "anthropic" | "openai" | undefined {
  if (model.startsWith("claude-")) return "anthropic";
  if (/^(?:gpt-|o\d)/.test(model)) return "openai";
  return undefined;
}

/**
 * What `next` reads, writes and pays on its model's cache right after `previous` (the
 * session's request before it, if any), or `undefined` for a model of no known API.
 */
export function cacheFigures(previous: ProviderRequest | undefined, next: ProviderRequest): CacheFigures | undefined {
  const api = apiOf(next.model);
  if (api === undefined) return undefined;
  const replayed = previous === undefined ? replayCache([next], { api })[0] : explainPrefix(previous, next, { api }).cache;
  if (replayed === undefined) return undefined;
  const { usage, usd, miss } = replayed;
  return {
    model: next.model,
    read: usage.cacheRead,
    written: usage.cacheWrite,
    uncached: usage.input,
    ...(usd === undefined ? {} : { usd }),
    ...(miss === undefined ? {} : { miss }),
  };
}
