// The cost bench's model of what a provider bills for a sequence of request bodies:
// tokens counted with gpt-tokenizer (o200k_base; an approximation of both providers'
// own tokenizers, see decision 020), prompt-cache hits simulated from each API's
// published rules, priced with the pricing table.
//
// - Anthropic: a request writes a cache entry at each breakpoint (`cache_control`) for
//   the prefix up to it; a later request reads the longest earlier entry that ends at one
//   of its own block boundaries at most 20 blocks before one of its breakpoints. Tokens
//   after the read prefix up to the last breakpoint are cache writes (1.25× input, 2× for
//   a 1-hour TTL), tokens after the last breakpoint plain input.
// - OpenAI: automatic caching for prompts of at least 1,024 tokens; the cached part is the
//   prefix shared with the session's previous request (same `prompt_cache_key`), counted
//   in 128-token steps; writes cost plain input.
// Every request is assumed to come within the cache lifetime of the previous one.

import { createHash } from "node:crypto";
import { encode } from "gpt-tokenizer";
import type { AnthropicMessagesBody, OpenAIChatBody, TokenUsage } from "../../core/providers/index.ts";

/** One unit the provider caches at: a content block (Anthropic) or a message (OpenAI). */
export interface Segment {
  /** Identity for prefix comparison: everything of the block but its breakpoint. */
  readonly key: string;
  /** The text that is tokenized. */
  readonly text: string;
  /** Whether the block carries a breakpoint, and its TTL. */
  readonly breakpoint?: "5m" | "1h";
}

const tokenCache = new Map<string, readonly number[]>();

/** The o200k_base tokens of `text` (memoized: histories repeat). */
export function tokensOf(text: string): readonly number[] {
  const known = tokenCache.get(text);
  if (known !== undefined) return known;
  const tokens: readonly number[] = encode(text);
  tokenCache.set(text, tokens);
  return tokens;
}

/** Anthropic body → blocks in cache order: tools, system, messages. */
export function anthropicSegments(body: AnthropicMessagesBody): Segment[] {
  const segments: Segment[] = [];
  const push = (block: object, text: string) => {
    const { cache_control, ...rest } = block as { cache_control?: { ttl?: string } };
    segments.push({
      key: JSON.stringify(rest),
      text,
      ...(cache_control === undefined ? {} : { breakpoint: cache_control.ttl === "1h" ? "1h" : "5m" }),
    });
  };
  for (const tool of body.tools ?? []) push(tool, JSON.stringify(tool));
  for (const block of body.system ?? []) push(block, block.text);
  body.messages.forEach((message, index) => {
    for (const block of message.content) {
      const text =
        block.type === "text"
          ? block.text
          : block.type === "tool_result"
            ? block.content
            : block.type === "tool_use"
              ? JSON.stringify({ name: block.name, input: block.input })
              : JSON.stringify(block);
      push({ ...block, role: message.role, message: index }, text);
    }
  });
  return segments;
}

/** Chat Completions body → messages in order, tools first. */
export function openAISegments(body: OpenAIChatBody): Segment[] {
  const segments: Segment[] = [];
  if (body.tools !== undefined) segments.push({ key: JSON.stringify(body.tools), text: JSON.stringify(body.tools) });
  for (const message of body.messages) {
    const text =
      message.role === "assistant" && message.tool_calls !== undefined
        ? `${message.content ?? ""}${JSON.stringify(message.tool_calls)}`
        : (message.content ?? "");
    segments.push({ key: JSON.stringify(message), text });
  }
  return segments;
}

const count = (segments: readonly Segment[], end: number) =>
  segments.slice(0, end).reduce((sum, segment) => sum + tokensOf(segment.text).length, 0);

/** Usage of each request of a session on Anthropic, given each reply's output tokens. */
export function anthropicUsage(requests: readonly Segment[][], outputs: readonly number[]): TokenUsage[] {
  const written = new Set<string>();
  return requests.map((segments, r) => {
    // chained hashes: prefix[k] identifies blocks 0..k-1
    const prefix: string[] = [""];
    for (const segment of segments) {
      prefix.push(
        createHash("sha1")
          .update(prefix.at(-1) ?? "")
          .update(segment.key)
          .digest("hex"),
      );
    }
    const breakpoints = segments.flatMap((segment, i) => (segment.breakpoint === undefined ? [] : [i + 1]));
    let read = 0;
    for (const end of breakpoints) {
      for (let k = end; k >= Math.max(1, end - 20); k--) {
        if (written.has(prefix[k] as string)) {
          read = Math.max(read, k);
          break;
        }
      }
    }
    const last = breakpoints.at(-1) ?? 0;
    let cacheWrite = 0;
    let cacheWrite1h = 0;
    let from = read;
    for (const end of breakpoints) {
      if (end <= from) continue;
      const tokens = count(segments, end) - count(segments, from);
      cacheWrite += tokens;
      if (segments[end - 1]?.breakpoint === "1h") cacheWrite1h += tokens;
      from = end;
    }
    for (const end of breakpoints) written.add(prefix[end] as string);
    return {
      input: count(segments, segments.length) - count(segments, Math.max(last, read)),
      cacheRead: count(segments, read),
      cacheWrite,
      ...(cacheWrite1h > 0 ? { cacheWrite1h } : {}),
      output: outputs[r] ?? 0,
    };
  });
}

/** Usage of each request of a session on OpenAI (automatic caching), given each reply's output tokens. */
export function openAIUsage(requests: readonly Segment[][], outputs: readonly number[]): TokenUsage[] {
  let previous: readonly number[] = [];
  return requests.map((segments, r) => {
    const tokens = segments.flatMap((segment) => tokensOf(segment.text));
    let shared = 0;
    const limit = Math.min(tokens.length, previous.length);
    while (shared < limit && tokens[shared] === previous[shared]) shared++;
    const cached = tokens.length >= 1024 && shared >= 1024 ? Math.floor(shared / 128) * 128 : 0;
    previous = tokens;
    return { input: tokens.length - cached, cacheRead: cached, cacheWrite: 0, output: outputs[r] ?? 0 };
  });
}
