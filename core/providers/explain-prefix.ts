// Owns `explainPrefix`: where two consecutive provider-neutral requests stop sharing a
// prefix, in which part (system or message), in which source's text, and why — a new
// Context Epoch (compaction, switch, move, replacement), which is allowed to break the
// cache, or a break within one epoch, which must never happen.

import type { ProviderRequest, RequestMessage } from "../session/provider.ts";
import { type CacheCostOptions, type CachedRequest, replayCache } from "./cache-model.ts";

/** Where the shared prefix ends. */
export interface PrefixDivergence {
  /** `model` (provider or model differ), `system` (a system part) or `messages`. */
  readonly part: "model" | "system" | "messages";
  /** Index of the system part or message that differs (for `model`, 0). */
  readonly index: number;
  /** The role of the differing message in `next` (or in `previous` if `next` has fewer). */
  readonly role?: RequestMessage["role"];
  /** Character offset in that part's text where the two first differ. */
  readonly offset: number;
  /**
   * Which source's text: the blank-line separated paragraph of the part (sources render
   * one paragraph group each, joined by blank lines) where the difference starts, by
   * index, with its first line from each side.
   */
  readonly paragraph: number;
  readonly previousLine: string;
  readonly nextLine: string;
}

/** The explanation, with what `next` reads and writes in the provider's cache when asked (`explainPrefix`'s `cache`). */
export type PrefixExplanation = PrefixKind & { readonly cache?: CachedRequest };

/** Whether and where the prefix holds. */
export type PrefixKind =
  | { readonly kind: "extends" }
  | {
      readonly kind: "new-epoch";
      /** `compaction`, `switch`, `move`, `replacement`, or `unknown` when the requests carry no epoch. */
      readonly reason: string;
      readonly at: PrefixDivergence;
    }
  | { readonly kind: "break-within-epoch"; readonly at: PrefixDivergence };

/** The text a message contributes, as compared: its role and content fields. */
function messageText(message: RequestMessage | undefined): string {
  return message === undefined ? "" : JSON.stringify(message);
}

function contentText(message: RequestMessage | undefined): string {
  if (message === undefined) return "";
  return message.role === "tool" ? message.result : message.text;
}

function firstDifference(a: string, b: string): number {
  const length = Math.min(a.length, b.length);
  let i = 0;
  while (i < length && a[i] === b[i]) i++;
  return i;
}

function divergence(
  part: PrefixDivergence["part"],
  index: number,
  previous: string,
  next: string,
  role?: RequestMessage["role"],
): PrefixDivergence {
  const offset = firstDifference(previous, next);
  const paragraph = previous.slice(0, offset).split("\n\n").length - 1;
  const lineAt = (text: string) => (text.split("\n\n")[paragraph] ?? "").split("\n")[0] ?? "";
  return {
    part,
    index,
    ...(role === undefined ? {} : { role }),
    offset,
    paragraph,
    previousLine: lineAt(previous),
    nextLine: lineAt(next),
  };
}

/** The first place `next` stops extending `previous`, or `undefined` when it extends it. */
function firstBreak(previous: ProviderRequest, next: ProviderRequest): PrefixDivergence | undefined {
  if (previous.provider !== next.provider || previous.model !== next.model) {
    return divergence("model", 0, `${previous.provider}/${previous.model}`, `${next.provider}/${next.model}`);
  }
  const systemParts = Math.max(previous.system.length, next.system.length);
  for (let i = 0; i < systemParts; i++) {
    const a = previous.system[i] ?? "";
    const b = next.system[i] ?? "";
    if (a !== b) return divergence("system", i, a, b);
  }
  for (let i = 0; i < previous.messages.length; i++) {
    const a = previous.messages[i];
    const b = next.messages[i];
    if (messageText(a) === messageText(b)) continue;
    const sameKind = a !== undefined && b !== undefined && a.role === b.role;
    const at = sameKind ? divergence("messages", i, contentText(a), contentText(b), b.role) : undefined;
    return at ?? divergence("messages", i, messageText(a), messageText(b), (b ?? a)?.role);
  }
  return undefined;
}

/**
 * Where `next` stops sharing a prefix with `previous` and why. `extends` when `next`
 * begins with everything `previous` sent; otherwise the first difference, classified
 * by the requests' epochs (`ProviderRequest.epoch`, set by the session runtime): a
 * different epoch number is a `new-epoch` with the reason it began (a provider or model
 * change without epochs counts as `switch`, a leading summary as `compaction`); the
 * same epoch is a `break-within-epoch`, a defect the runtime must never produce.
 *
 * With `cache` (an API and a model), the cache model replays the two requests lowered for
 * that model and tells what `next` reads from cache, writes and pays, and, when it does not
 * read what `previous` cached, why (`CachedRequest.miss`).
 */
export function explainPrefix(previous: ProviderRequest, next: ProviderRequest, cache?: CacheCostOptions): PrefixExplanation {
  const kind = explainKind(previous, next);
  if (cache === undefined) return kind;
  return { ...kind, cache: replayCache([previous, next], cache)[1] as CachedRequest };
}

function explainKind(previous: ProviderRequest, next: ProviderRequest): PrefixKind {
  const at = firstBreak(previous, next);
  if (at === undefined) return { kind: "extends" };
  if (previous.epoch !== undefined && next.epoch !== undefined) {
    return previous.epoch.number === next.epoch.number
      ? { kind: "break-within-epoch", at }
      : { kind: "new-epoch", reason: next.epoch.reason, at };
  }
  if (at.part === "model") return { kind: "new-epoch", reason: "switch", at };
  const opensWithSummary = next.messages[0]?.role === "summary" && previous.messages[0]?.role !== "summary";
  if (opensWithSummary) return { kind: "new-epoch", reason: "compaction", at };
  return at.part === "system" ? { kind: "new-epoch", reason: "unknown", at } : { kind: "break-within-epoch", at };
}
