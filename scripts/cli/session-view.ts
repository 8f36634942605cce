// Owns the one view of a session that `dev`'s terminal and the inspector's page both show:
// its Context Epochs, the timeline with each Mid-Conversation System Message marked, the
// admitted Context Snapshot with when each value was admitted, and each provider request
// with the share of it the previous request's prefix covers (computed here, and only here).
// Every view is plain JSON: what the page fetches as it is.

import type { ProviderRequest } from "../../core/index.ts";
import { explainPrefix } from "../../core/providers.ts";
import type { StoredMessage } from "../../core/store.ts";
import type { Snapshot } from "../../core/system-context.ts";
import { type CacheFigures, cacheFigures } from "./cache-figures.ts";

/** One session, as the sessions list shows it. */
export interface SessionSummary {
  readonly id: string;
  readonly provider: string;
  readonly model: string;
  readonly location: string;
  /** The active Context Epoch's number, or `null` before the first boundary. */
  readonly epoch: number | null;
  readonly messageCount: number;
}

/** Why a Context Epoch began (as the store says: `initial`, `compaction`, `switch`, `move`, `replacement`). */
export type EpochReasonView = string;

/** One Context Epoch of a session. */
export interface EpochView {
  readonly number: number;
  readonly reason: EpochReasonView;
  /** When the epoch began (ISO 8601), or `null` when nobody saw it begin (an epoch from before the inspector started). */
  readonly at: string | null;
  /** The Baseline System Context the epoch began with, exactly as sent; `null` when not known. */
  readonly baseline: string | null;
}

/** One durable message of the timeline. */
export interface MessageView {
  readonly seq: number;
  readonly epoch: number;
  /** `user`, `assistant`, `tool`, `system-update` or `summary`. */
  readonly role: StoredMessage["role"];
  readonly text: string;
  /** A Mid-Conversation System Message (role `system-update`): the page marks it and folds it, the terminal frames it. */
  readonly isSystemUpdate: boolean;
  /** Tool calls of an assistant message, by name; the tool's name for a tool result. */
  readonly toolNames?: readonly string[];
}

/** One row of the current Context Snapshot. */
export interface SnapshotRow {
  readonly key: string;
  /** The codec-encoded value, plain JSON. */
  readonly value: unknown;
  /** When this value was admitted (ISO 8601), or `null` when it was admitted before anyone watched. */
  readonly admittedAt: string | null;
}

/** One provider request and how much of it the prompt cache could reuse. */
export interface RequestView {
  /** Position among the session's requests, from 1. */
  readonly index: number;
  /** When it was sent (ISO 8601). */
  readonly at: string;
  readonly provider: string;
  readonly model: string;
  /** The epoch it was built in, or `null` when the request carries none. */
  readonly epoch: number | null;
  /** UTF-8 bytes of the request's system parts and messages. */
  readonly bytes: number;
  /** Of `bytes`, the prefix the previous request of the session already sent. */
  readonly reusedBytes: number;
  /** `bytes - reusedBytes`. */
  readonly newBytes: number;
  /** `first`, `extends`, `new-epoch` (with `reason`) or `break-within-epoch` (a defect). */
  readonly prefix: "first" | "extends" | "new-epoch" | "break-within-epoch";
  readonly reason?: string;
  /** What it read from and wrote to the provider's cache on its model, by the cache model (claude-* and gpt-* models). */
  readonly cache?: CacheFigures;
}

/** Everything the page and the terminal show of one session. */
export interface SessionView extends SessionSummary {
  /** Oldest first; the last is the active one. */
  readonly epochs: readonly EpochView[];
  /** The active epoch's Baseline System Context, or `null` before the first boundary. */
  readonly baseline: string | null;
  readonly messages: readonly MessageView[];
  /** The current snapshot, by key. */
  readonly snapshot: readonly SnapshotRow[];
  /** Oldest first. */
  readonly requests: readonly RequestView[];
}

/** A time (ms since the Unix epoch) as the views give it: ISO 8601. */
export const isoTime = (ms: number): string => new Date(ms).toISOString();

/** The summary fields of a session's view (what the sessions list shows). */
export function summaryOf(view: SessionView): SessionSummary {
  const { id, provider, model, location, epoch, messageCount } = view;
  return { id, provider, model, location, epoch, messageCount };
}

/** A stored message as the timeline shows it. */
export function messageView(message: StoredMessage): MessageView {
  const toolNames =
    message.toolCalls !== undefined && message.toolCalls.length > 0
      ? message.toolCalls.map((call) => call.name)
      : message.name !== undefined
        ? [message.name]
        : undefined;
  return {
    seq: message.seq,
    epoch: message.epoch,
    role: message.role,
    text: message.text,
    isSystemUpdate: message.role === "system-update",
    ...(toolNames === undefined ? {} : { toolNames }),
  };
}

/** The prefix share of `next` after `previous` (the session's request before it, if any). */
export interface PrefixShare {
  readonly bytes: number;
  readonly reusedBytes: number;
  readonly prefix: RequestView["prefix"];
  readonly reason?: string;
}

const bytesOf = (text: string) => Buffer.byteLength(text, "utf8");
const messageBytes = (message: ProviderRequest["messages"][number]) => bytesOf(JSON.stringify(message));
const sum = (sizes: readonly number[]) => sizes.reduce((a, b) => a + b, 0);

/**
 * How many bytes of `next` repeat what `previous` sent, by `explainPrefix`. A request
 * is its system parts (their text) and messages (their JSON); the reused prefix runs to
 * where the two first differ: into a system part by character offset (a changed
 * Baseline keeps the text before the change), a differing message counts as new
 * whole, and a different provider or model reuses nothing.
 */
export function prefixShare(previous: ProviderRequest | undefined, next: ProviderRequest): PrefixShare {
  const systemSizes = next.system.map(bytesOf);
  const messageSizes = next.messages.map(messageBytes);
  const bytes = sum(systemSizes) + sum(messageSizes);
  if (previous === undefined) return { bytes, reusedBytes: 0, prefix: "first" };
  const explanation = explainPrefix(previous, next);
  if (explanation.kind === "extends") {
    const reusedBytes = sum(previous.system.map(bytesOf)) + sum(previous.messages.map(messageBytes));
    return { bytes, reusedBytes: Math.min(bytes, reusedBytes), prefix: "extends" };
  }
  const at = explanation.at;
  let reusedBytes = 0;
  if (at.part === "system") {
    reusedBytes = sum(systemSizes.slice(0, at.index)) + bytesOf((next.system[at.index] ?? "").slice(0, at.offset));
  } else if (at.part === "messages") {
    reusedBytes = sum(systemSizes) + sum(messageSizes.slice(0, at.index));
  }
  reusedBytes = Math.min(bytes, reusedBytes);
  return explanation.kind === "new-epoch"
    ? { bytes, reusedBytes, prefix: "new-epoch", reason: explanation.reason }
    : { bytes, reusedBytes, prefix: "break-within-epoch" };
}

/** A request sent, and when (ms since the Unix epoch). */
export interface SentRequest {
  readonly request: ProviderRequest;
  readonly at: number;
}

/** The `index`th request of a session (from 1), with its prefix share and cache figures after `previous`, the one before it. */
export function requestView(previous: ProviderRequest | undefined, sent: SentRequest, index: number): RequestView {
  const { request, at } = sent;
  const share = prefixShare(previous, request);
  const cache = cacheFigures(previous, request);
  return {
    index,
    at: isoTime(at),
    provider: request.provider,
    model: request.model,
    epoch: request.epoch?.number ?? null,
    bytes: share.bytes,
    reusedBytes: share.reusedBytes,
    newBytes: share.bytes - share.reusedBytes,
    prefix: share.prefix,
    ...(share.reason === undefined ? {} : { reason: share.reason }),
    ...(cache === undefined ? {} : { cache }),
  };
}

/** A session's requests, oldest first, each after the one before it. */
export function requestViews(sent: readonly SentRequest[]): RequestView[] {
  return sent.map((each, i) => requestView(sent[i - 1]?.request, each, i + 1));
}

/**
 * When each value of a session's snapshot was admitted, as far as a watcher saw: a value
 * that stays keeps its time; a changed or new one, and every value after a new epoch (its
 * Baseline admits them all again), gets the time it was first seen.
 */
export class AdmissionTimes {
  #epoch: number | undefined;
  #seen = new Map<string, { readonly json: string; readonly at: number }>();

  /** The snapshot of `epoch` as seen at `at` (ms): its rows by key. */
  observe(epoch: { readonly number: number; readonly snapshot: Snapshot }, at: number): SnapshotRow[] {
    const isNewEpoch = this.#epoch !== epoch.number;
    this.#epoch = epoch.number;
    const seen = new Map<string, { readonly json: string; readonly at: number }>();
    for (const [key, entry] of Object.entries(epoch.snapshot)) {
      const json = JSON.stringify(entry.value);
      const before = this.#seen.get(key);
      seen.set(key, !isNewEpoch && before !== undefined && before.json === json ? before : { json, at });
    }
    this.#seen = seen;
    return Object.entries(epoch.snapshot)
      .map(
        ([key, entry]): SnapshotRow => ({ key, value: entry.value, admittedAt: isoTime((seen.get(key) as { at: number }).at) }),
      )
      .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }
}
