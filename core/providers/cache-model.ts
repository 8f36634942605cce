/**
 * The cache model: what a provider's prompt cache reads and writes for a session's
 * lowered request bodies, replayed in order under that provider's published rules, and
 * what that costs (decision 100). It answers "what did (or would) each request of this
 * session cost on this model, and where did a cached prefix go unread, and why".
 *
 * Anthropic (Messages API):
 * - Blocks are hashed in cache order (tools, system, messages); an entry is written at
 *   each breakpoint (`cache_control`) for the prefix ending there, when that prefix holds
 *   at least the model's minimum cacheable tokens (`cacheMinimumTokens`).
 * - A request reads the longest live entry that ends at one of its breakpoints or at a
 *   block boundary at most 20 blocks before one; a read refreshes the entry's lifetime
 *   (5 minutes, or 1 hour for `ttl: "1h"`).
 * - Tokens after the read prefix up to the last written breakpoint are cache writes
 *   (1-hour ones reported apart); the rest is plain input.
 * - An entry written at a breakpoint on a `role: "system"` message that ends the request
 *   is never read back (reported: anthropics/claude-code#96101, maximhq/bifrost#5929): it
 *   is billed as a write and then misses.
 *
 * OpenAI (Chat Completions):
 * - With explicit breakpoints (`prompt_cache_options: { mode: "explicit" }`, gpt-5.6 and
 *   later), entries are written at the request's breakpoints only, at most the latest four
 *   beyond the read prefix, lifetime 30 minutes; a read is the longest live entry among
 *   the latest 80 breakpoints of the request, with no lookback limit; prompts under 1,024
 *   tokens are not cached. Writes are billed at the row's write price (1.25× input on
 *   gpt-5.6).
 * - Otherwise (implicit caching, older models): the prefix shared with the session's
 *   previous request, from 1,024 tokens, counted in 128-token steps, messages compared
 *   whole; writes cost plain input.
 *
 * Tokens are counted by `countTokens` (default: about four characters a token, an
 * estimate; the `cost` bench passes a real tokenizer). Requests are taken to come at the
 * times in `at` (milliseconds), all at once when not given.
 *
 * @module
 */

import { createHash } from "node:crypto";
import type { ProviderRequest, TokenUsage } from "../session/provider.ts";
import type { ToolDefinition } from "../session/tool-definition.ts";
import { type AnthropicMessagesBody, anthropicCapabilities, lowerAnthropic } from "./anthropic-lowering.ts";
import type { AnthropicCacheTtl } from "./anthropic-wire.ts";
import { lowerOpenAI, type OpenAIChatBody, type OpenAIMessage, openAICapabilities, openAIModels } from "./openai-lowering.ts";
import { costOf, type ModelPrice, priceOf } from "./pricing.ts";

/** Counts the tokens of a text. */
export type CountTokens = (text: string) => number;

/** The default token count: about four characters a token (an estimate, not a tokenizer). */
export const estimateTokens: CountTokens = (text) => Math.ceil(text.length / 4);

/** Why part of what the previous request cached was not read by the next. */
export type CacheMissReason =
  /** The entry's lifetime ran out before this request came. */
  | "expired"
  /** The entry sat on a `role: "system"` message that ended its request: never read back. */
  | "system-message-entry"
  /** The entry is alive but further back than the provider looks (20 blocks; the latest 80 breakpoints). */
  | "beyond-lookback"
  /** The prefix was shorter than the model's minimum cacheable length: nothing was written. */
  | "below-minimum"
  /** The previous request had more new breakpoints than the provider writes (four). */
  | "not-written";

/** A prefix the previous request cached, or tried to, that this request shares but did not read. */
export interface CacheMiss {
  readonly reason: CacheMissReason;
  /** Tokens of that prefix beyond what this request read. */
  readonly tokens: number;
}

/** One request as the cache model replays it. */
export interface CachedRequest {
  /** Input, cache-read and cache-write tokens (and output, from `outputs`). */
  readonly usage: TokenUsage;
  /** US dollars at `price` (or the pricing table's row for the model), when known. */
  readonly usd?: number;
  readonly miss?: CacheMiss;
}

/** Options of the replays. */
export interface CacheReplayOptions {
  readonly countTokens?: CountTokens;
  /** When each request was sent, in milliseconds (any origin); default all at once. */
  readonly at?: readonly number[];
  /** Output tokens of each request's reply, for the price; default 0. */
  readonly outputs?: readonly number[];
  /** The price to apply; default the pricing table's row for the body's model. */
  readonly price?: ModelPrice;
  /** The shortest cacheable prefix; default the model's (Anthropic capability table) or 1,024 (OpenAI). */
  readonly minimumTokens?: number;
}

interface Unit {
  readonly key: string;
  readonly tokens: number;
  readonly breakpoint?: number;
  /** An entry ending at this unit is never read (Anthropic: a trailing system message). */
  readonly unreadable?: boolean;
}

interface Entry {
  expires: number;
  readonly ttl: number;
  readonly unreadable: boolean;
}

const minute = 60_000;

/** Chained digests: `prefix[k]` names units `0..k-1`; cumulative token counts beside. */
function prefixes(units: readonly Unit[]): { digests: string[]; tokens: number[] } {
  const digests = [""];
  const tokens = [0];
  for (const unit of units) {
    digests.push(
      createHash("sha1")
        .update(digests.at(-1) as string)
        .update(unit.key)
        .digest("hex"),
    );
    tokens.push((tokens.at(-1) as number) + unit.tokens);
  }
  return { digests, tokens };
}

function priced(usage: TokenUsage, price: ModelPrice | undefined, miss: CacheMiss | undefined): CachedRequest {
  return { usage, ...(price === undefined ? {} : { usd: costOf(usage, price) }), ...(miss === undefined ? {} : { miss }) };
}

/** What the previous request wrote, or tried to write, at its breakpoints: position, digest, why it might not exist. */
interface Attempt {
  readonly end: number;
  readonly digest: string;
  readonly tokens: number;
  readonly outcome: "written" | "below-minimum" | "not-written";
}

/**
 * The miss of a request: the longest prefix the previous request wrote (or tried to) that
 * this request shares, when this request read less of it, and why.
 */
function missOf(
  attempts: readonly Attempt[],
  digests: readonly string[],
  tokens: readonly number[],
  read: number,
  entries: ReadonlyMap<string, Entry>,
  at: number,
): CacheMiss | undefined {
  const shared = attempts.filter((attempt) => digests[attempt.end] === attempt.digest).at(-1);
  if (shared === undefined || shared.end <= read) return undefined;
  const missed = (shared.tokens - (tokens[read] as number)) as number;
  if (shared.outcome !== "written") return { reason: shared.outcome, tokens: missed };
  const entry = entries.get(shared.digest);
  if (entry === undefined || entry.expires <= at) return { reason: "expired", tokens: missed };
  if (entry.unreadable) return { reason: "system-message-entry", tokens: missed };
  return { reason: "beyond-lookback", tokens: missed };
}

/** An Anthropic body's blocks in cache order: tools, system, then each message's blocks. */
function anthropicUnits(body: AnthropicMessagesBody, count: CountTokens): Unit[] {
  const units: Unit[] = [];
  const push = (block: object, text: string, unreadable: boolean) => {
    const { cache_control, ...rest } = block as { cache_control?: { ttl?: string } };
    units.push({
      key: JSON.stringify(rest),
      tokens: count(text),
      ...(cache_control === undefined ? {} : { breakpoint: cache_control.ttl === "1h" ? 60 * minute : 5 * minute }),
      ...(unreadable ? { unreadable } : {}),
    });
  };
  for (const tool of body.tools ?? []) push(tool, JSON.stringify(tool), false);
  for (const block of body.system ?? []) push({ ...block, role: "system-field" }, block.text, false);
  body.messages.forEach((message, index) => {
    const trailingSystem = message.role === "system" && index === body.messages.length - 1;
    for (const block of message.content) {
      const text =
        block.type === "text"
          ? block.text
          : block.type === "tool_result"
            ? block.content
            : block.type === "tool_use"
              ? JSON.stringify({ name: block.name, input: block.input })
              : JSON.stringify(block);
      push({ ...block, role: message.role, message: index }, text, trailingSystem);
    }
  });
  return units;
}

/**
 * Replays Anthropic Messages bodies, in the order sent, through Anthropic's prompt cache
 * rules (see the module). One result per body.
 */
export function replayAnthropicCache(
  bodies: readonly AnthropicMessagesBody[],
  options: CacheReplayOptions = {},
): CachedRequest[] {
  const count = options.countTokens ?? estimateTokens;
  const entries = new Map<string, Entry>();
  let previous: Attempt[] = [];
  return bodies.map((body, r) => {
    const at = options.at?.[r] ?? 0;
    const minimum = options.minimumTokens ?? anthropicCapabilities(body.model).cacheMinimumTokens ?? 1024;
    const units = anthropicUnits(body, count);
    const { digests, tokens } = prefixes(units);
    const breakpoints = units.flatMap((unit, i) => (unit.breakpoint === undefined ? [] : [i + 1]));
    const live = (k: number) => {
      const entry = entries.get(digests[k] as string);
      return entry !== undefined && entry.expires > at && !entry.unreadable ? entry : undefined;
    };
    let read = 0;
    for (const end of breakpoints) {
      for (let k = end; k >= Math.max(1, end - 20); k--) {
        if (live(k) === undefined) continue;
        read = Math.max(read, k);
        break;
      }
    }
    if (read > 0) {
      const entry = live(read) as Entry;
      entry.expires = at + entry.ttl;
    }
    const miss = r === 0 ? undefined : missOf(previous, digests, tokens, read, entries, at);
    let written = read;
    let cacheWrite = 0;
    let cacheWrite1h = 0;
    const attempts: Attempt[] = [];
    for (const end of breakpoints) {
      const unit = units[end - 1] as Unit;
      const digest = digests[end] as string;
      const prefix = tokens[end] as number;
      if (prefix < minimum) {
        attempts.push({ end, digest, tokens: prefix, outcome: "below-minimum" });
        continue;
      }
      attempts.push({ end, digest, tokens: prefix, outcome: "written" });
      if (end <= read) continue;
      const ttl = unit.breakpoint as number;
      const known = entries.get(digest);
      if (known === undefined || known.expires <= at || known.unreadable !== (unit.unreadable === true)) {
        entries.set(digest, { expires: at + ttl, ttl, unreadable: unit.unreadable === true });
      } else known.expires = Math.max(known.expires, at + ttl);
      if (end > written) {
        const added = prefix - (tokens[written] as number);
        cacheWrite += added;
        if (ttl > 5 * minute) cacheWrite1h += added;
        written = end;
      }
    }
    previous = attempts;
    const total = tokens.at(-1) as number;
    const usage: TokenUsage = {
      input: total - (tokens[written] as number),
      cacheRead: tokens[read] as number,
      cacheWrite,
      ...(cacheWrite1h > 0 ? { cacheWrite1h } : {}),
      output: options.outputs?.[r] ?? 0,
    };
    return priced(usage, options.price ?? priceOf(body.model)?.price, miss);
  });
}

function openAIText(message: OpenAIMessage): string {
  const content = message.content;
  const text = typeof content === "string" ? content : content === null ? "" : content.map((part) => part.text).join("");
  return message.role === "assistant" && message.tool_calls !== undefined ? `${text}${JSON.stringify(message.tool_calls)}` : text;
}

function hasBreakpoint(message: OpenAIMessage): boolean {
  return Array.isArray(message.content) && message.content.some((part) => part.prompt_cache_breakpoint !== undefined);
}

/** A Chat Completions body's units: the tools (one), then each message. */
function openAIUnits(body: OpenAIChatBody, count: CountTokens): Unit[] {
  const units: Unit[] = [];
  if (body.tools !== undefined) units.push({ key: JSON.stringify(body.tools), tokens: count(JSON.stringify(body.tools)) });
  for (const message of body.messages) {
    const plain = Array.isArray(message.content)
      ? { ...message, content: message.content.map(({ prompt_cache_breakpoint: _mark, ...part }) => part) }
      : message;
    units.push({
      key: JSON.stringify(plain),
      tokens: count(openAIText(message)),
      ...(hasBreakpoint(message) ? { breakpoint: 30 * minute } : {}),
    });
  }
  return units;
}

/**
 * Replays Chat Completions bodies, in the order sent, through OpenAI's prompt cache rules
 * (explicit breakpoints when the body asks for them, implicit caching otherwise; see the
 * module). One result per body.
 */
export function replayOpenAICache(bodies: readonly OpenAIChatBody[], options: CacheReplayOptions = {}): CachedRequest[] {
  const count = options.countTokens ?? estimateTokens;
  const minimum = options.minimumTokens ?? 1024;
  const entries = new Map<string, Entry>();
  let previous: Attempt[] = [];
  let previousDigests: readonly string[] = [];
  return bodies.map((body, r) => {
    const at = options.at?.[r] ?? 0;
    const price = options.price ?? priceOf(body.model)?.price;
    const units = openAIUnits(body, count);
    const { digests, tokens } = prefixes(units);
    const total = tokens.at(-1) as number;
    const output = options.outputs?.[r] ?? 0;
    if (body.prompt_cache_options?.mode !== "explicit") {
      let shared = 0;
      while (shared < units.length && digests[shared + 1] === previousDigests[shared + 1]) shared++;
      previousDigests = digests;
      const prefix = tokens[shared] as number;
      const cached = total >= minimum && prefix >= minimum ? Math.floor(prefix / 128) * 128 : 0;
      return priced({ input: total - cached, cacheRead: cached, cacheWrite: 0, output }, price, undefined);
    }
    const breakpoints = units.flatMap((unit, i) => (unit.breakpoint === undefined ? [] : [i + 1]));
    const live = (k: number) => {
      const entry = entries.get(digests[k] as string);
      return entry !== undefined && entry.expires > at ? entry : undefined;
    };
    let read = 0;
    for (const end of breakpoints.slice(-80)) if (live(end) !== undefined) read = Math.max(read, end);
    if (read > 0) {
      const entry = live(read) as Entry;
      entry.expires = at + entry.ttl;
    }
    const miss = r === 0 ? undefined : missOf(previous, digests, tokens, read, entries, at);
    const fresh = breakpoints.filter((end) => end > read && (tokens[end] as number) >= minimum);
    const writes = new Set(fresh.slice(-4));
    const attempts: Attempt[] = breakpoints.map((end) => ({
      end,
      digest: digests[end] as string,
      tokens: tokens[end] as number,
      outcome: (tokens[end] as number) < minimum ? "below-minimum" : end <= read || writes.has(end) ? "written" : "not-written",
    }));
    let written = read;
    for (const end of writes) {
      entries.set(digests[end] as string, { expires: at + 30 * minute, ttl: 30 * minute, unreadable: false });
      written = Math.max(written, end);
    }
    previous = attempts;
    previousDigests = digests;
    const usage: TokenUsage = {
      input: total - (tokens[written] as number),
      cacheRead: tokens[read] as number,
      cacheWrite: (tokens[written] as number) - (tokens[read] as number),
      output,
    };
    return priced(usage, price, miss);
  });
}

/** Options of `replayCache`: the replay's, and how to lower the requests. */
export interface CacheCostOptions extends CacheReplayOptions {
  /** Which API's rules: `anthropic` or `openai`. */
  readonly api: "anthropic" | "openai";
  /** The model to lower for and price (default each request's own). */
  readonly model?: string;
  readonly tools?: readonly ToolDefinition[];
  /** Anthropic only: the breakpoints' lifetime, as the adapter's option. */
  readonly cacheTtl?: AnthropicCacheTtl;
}

/**
 * What a session's provider-neutral requests cost, or would cost, on `model`: each is
 * lowered as the adapter lowers it (the default capability tables) and replayed in order.
 */
export function replayCache(requests: readonly ProviderRequest[], options: CacheCostOptions): CachedRequest[] {
  const tools = options.tools ?? [];
  const on = (request: ProviderRequest) => (options.model === undefined ? request : { ...request, model: options.model });
  if (options.api === "anthropic") {
    const bodies = requests.map(on).map((request) =>
      lowerAnthropic(request, anthropicCapabilities(request.model), {
        tools,
        ...(options.cacheTtl === undefined ? {} : { cacheTtl: options.cacheTtl }),
      }),
    );
    return replayAnthropicCache(bodies, options);
  }
  const bodies = requests
    .map(on)
    .map((request) => lowerOpenAI(request, openAICapabilities(request.model, openAIModels), { tools }));
  return replayOpenAICache(bodies, options);
}
