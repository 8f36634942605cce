// Owns the checks of what enters a session from outside, before anything is written:
// provider replies (the port's schema, well-formed text, plain-JSON tool inputs, distinct
// call ids), well-formed text, and the size limits. Writes are checked as strictly as
// reads, so nothing admitted can make the session unreadable later.

import { Compile } from "typebox/compile";
import { toPlainJson, ValueNotPlainJson } from "../system-context/json.ts";
import { ProviderReplyInvalid, SizeLimitExceeded, TextNotWellFormed } from "./errors.ts";
import { type ProviderReply, ProviderReplySchema, type ToolCall } from "./provider.ts";

const replyValidator = Compile(ProviderReplySchema);

/** The size limits of a host, in UTF-8 bytes. */
export interface SessionLimits {
  /** A prompt (default 1 MiB). */
  readonly promptBytes?: number;
  /** A tool result; a bigger one is stored as an error result saying so (default 1 MiB). */
  readonly toolResultBytes?: number;
  /** One Context Source's encoded value admitted into a snapshot (default 1 MiB). */
  readonly sourceValueBytes?: number;
}

/** @internal */
export const defaultLimits: Required<SessionLimits> = {
  promptBytes: 1 << 20,
  toolResultBytes: 1 << 20,
  sourceValueBytes: 1 << 20,
};

/** @internal The index of the first lone surrogate of `text`, or -1 when it is well-formed. */
export function loneSurrogateAt(text: string): number {
  // With the `u` flag a surrogate pair is one code point: only a lone surrogate matches.
  return text.search(/[\uD800-\uDFFF]/u);
}

/** @internal Throws `TextNotWellFormed` for text with a lone surrogate. */
export function checkWellFormed(text: string, sessionId: string, what: string): void {
  const index = loneSurrogateAt(text);
  if (index >= 0) throw new TextNotWellFormed({ sessionId, what, index });
}

/** @internal UTF-8 bytes of `text`. */
export function bytesOf(text: string): number {
  return Buffer.byteLength(text, "utf8");
}

/** @internal Throws `SizeLimitExceeded` when `text` is over `maxBytes`. */
export function checkSize(
  text: string,
  maxBytes: number,
  details: { sessionId: string; what: string; limit: SizeLimitExceeded["limit"] },
): void {
  // UTF-8 takes at most 3 bytes per UTF-16 unit: most texts need no count at all.
  if (text.length * 3 <= maxBytes) return;
  const bytes = bytesOf(text);
  if (bytes > maxBytes) throw new SizeLimitExceeded({ ...details, bytes, maxBytes });
}

/** Whose reply is checked: named by every `ProviderReplyInvalid`. */
type ReplyContext = { sessionId: string; provider: string };

// Module functions, not closures per reply: a step creates no function of its own here.
function invalid(context: ReplyContext, field: string, reason: string): ProviderReplyInvalid {
  return new ProviderReplyInvalid({ ...context, field, reason });
}

function checkReplyText(context: ReplyContext, field: string, value: string): void {
  const index = loneSurrogateAt(value);
  if (index >= 0) throw invalid(context, field, `not well-formed text (a lone surrogate at index ${index})`);
}

/**
 * @internal
 * Checks a provider reply against the port and returns what is stored of it (text and
 * tool calls, inputs as owned plain JSON). Throws `ProviderReplyInvalid` naming the field.
 */
export function checkReply(reply: unknown, context: ReplyContext): ProviderReply {
  if (!replyValidator.Check(reply)) {
    const first = replyValidator.Errors(reply)[0];
    throw invalid(context, first?.instancePath ?? "/", first?.message ?? "not a reply { text, toolCalls? }");
  }
  const checked = reply as ProviderReply;
  checkReplyText(context, "/text", checked.text);
  const kept: { -readonly [K in keyof ProviderReply]: ProviderReply[K] } = { text: checked.text };
  if (checked.usage !== undefined) {
    const { input, cacheRead, cacheWrite, cacheWrite1h, output } = checked.usage;
    kept.usage = { input, cacheRead, cacheWrite, ...(cacheWrite1h === undefined ? {} : { cacheWrite1h }), output };
  }
  if (checked.providerContent !== undefined) {
    const { provider, model, blocks } = checked.providerContent;
    try {
      kept.providerContent = { provider, model, blocks: toPlainJson(blocks) as unknown[] };
    } catch (error) {
      if (error instanceof ValueNotPlainJson)
        throw invalid(context, `/providerContent/blocks${error.path}`, `${error.reason}, not plain JSON`);
      throw error;
    }
  }
  if (checked.refusal !== undefined) kept.refusal = checked.refusal;
  if (checked.toolCalls === undefined) return kept;
  const ids = new Set<string>();
  const toolCalls: ToolCall[] = checked.toolCalls.map((call, i) => {
    checkReplyText(context, `/toolCalls/${i}/id`, call.id);
    checkReplyText(context, `/toolCalls/${i}/name`, call.name);
    if (call.id === "") throw invalid(context, `/toolCalls/${i}/id`, "is empty; a tool result must name its call");
    if (ids.has(call.id)) throw invalid(context, `/toolCalls/${i}/id`, `repeats the call id ${JSON.stringify(call.id)}`);
    ids.add(call.id);
    if (call.input === undefined) return { id: call.id, name: call.name, input: undefined };
    try {
      return { id: call.id, name: call.name, input: toPlainJson(call.input) };
    } catch (error) {
      if (error instanceof ValueNotPlainJson)
        throw invalid(context, `/toolCalls/${i}/input${error.path}`, `${error.reason}, not plain JSON`);
      throw error;
    }
  });
  kept.toolCalls = toolCalls;
  return kept;
}
