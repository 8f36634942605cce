// Owns the session store interface: what the runtime needs to keep durably, with no
// opinion on how. The SQLite store is the default; other stores implement this.

import type { DiscoveryLog } from "../../sources/instructions/service.ts";
import type { Snapshot, SnapshotChange } from "../../system-context/index.ts";
import type { ProviderContent, TokenUsage, ToolCall } from "../provider.ts";

// The errors a store throws; the runtime tells them apart with `instanceof`.
export { RevisionConflict, SessionCorrupt, SessionNotFound, StoreCannotList } from "../errors.ts";

import { StoreCannotList } from "../errors.ts";

/** Message roles, as `host.messages()` reports them. */
export type MessageRole = "user" | "assistant" | "tool" | "system-update" | "summary";

/** Why a Context Epoch began. */
export type EpochReason = "initial" | "compaction" | "switch" | "move" | "replacement";

/** A session as stored. `revision` advances with every boundary commit. */
export interface SessionRecord {
  readonly id: string;
  readonly location: string;
  readonly provider: string;
  readonly model: string;
  readonly revision: number;
  /** A transition asked for a new Context Epoch at the next boundary. */
  readonly epochDue: EpochReason | undefined;
  /** A boundary was admitted and its provider reply is not persisted yet: a retry resends it. */
  readonly isAwaitingReply: boolean;
  /** The in-flight lease of the awaited reply's provider call: which runtime makes it, and until when (ms). */
  readonly lease?: InFlightLease;
  /**
   * A session of the context engine: the caller's history as its last
   * boundary saw it. The Host's sessions, whose history is stored, have none.
   */
  readonly seen?: SeenHistory;
}

/** How much of a caller's own history an engine boundary saw: the number of messages and their chained digest. */
export interface SeenHistory {
  readonly count: number;
  readonly digest: string;
}

/** Where and with what a session runs. */
export interface SessionWhere {
  readonly location: string;
  readonly provider: string;
  readonly model: string;
}

/** Which runtime calls the provider for a session's admitted boundary, and until when (ms since the epoch). */
export interface InFlightLease {
  readonly holder: string;
  readonly expiresAt: number;
}

/** One durable message, oldest first by `seq`. */
export interface StoredMessage {
  readonly seq: number;
  readonly role: MessageRole;
  readonly text: string;
  /** The Context Epoch in effect when the message was admitted. */
  readonly epoch: number;
  readonly toolCalls?: readonly ToolCall[];
  readonly callId?: string;
  readonly name?: string;
  /** An assistant reply's token usage, when the provider reported it. */
  readonly usage?: TokenUsage;
  /** An assistant reply's provider content to replay (thinking blocks). */
  readonly providerContent?: ProviderContent;
  /**
   * A Mid-Conversation System Message of an engine session: how many of the caller's
   * messages come before it (the `seen.count` of the boundary that admitted it).
   */
  readonly position?: number;
}

/** The active Context Epoch. */
export interface EpochRecord {
  readonly number: number;
  /** The Baseline System Context exactly as sent. */
  readonly baseline: string;
  readonly snapshot: Snapshot;
  /** The sequence number of the first message of this epoch. */
  readonly startedSeq: number;
  readonly reason: EpochReason;
  /**
   * The host system prompt the epoch began with: part of the cache prefix, so it is kept
   * with the Baseline. `null`: none; `undefined`: not recorded (an epoch from an older file).
   */
  readonly systemPrompt: string | null | undefined;
}

/** Input admitted durably but not yet promoted into history. */
export interface PendingPrompt {
  readonly id: number;
  readonly text: string;
}

/** What one Safe Provider-Turn Boundary commits, all or nothing. */
export interface BoundaryCommit {
  /** A fresh Context Epoch begins before anything else of this boundary. */
  readonly newEpoch?: {
    readonly baseline: string;
    readonly snapshot: Snapshot;
    readonly reason: EpochReason;
    readonly systemPrompt: string | null;
    /** The session runs here from this epoch on (an engine session's switch or move). */
    readonly where?: SessionWhere;
  };
  /** Pending prompts to promote into history, in order. */
  readonly promote: readonly PendingPrompt[];
  /**
   * A Mid-Conversation System Message and the snapshot it advances to, with what changed
   * against the active snapshot when `reconcile` said so (the store writes only that;
   * without it, the store compares entries).
   */
  readonly systemUpdate?: { readonly text: string; readonly snapshot: Snapshot; readonly change?: SnapshotChange };
  /** Whether the session's due epoch transition is settled by this boundary. */
  readonly settlesEpochDue: boolean;
  /** The in-flight lease the committing runtime takes for the provider call that follows. */
  readonly lease?: InFlightLease;
  /**
   * An engine session's boundary: the caller's history it saw. No reply is
   * awaited (the caller calls its provider), and a Mid-Conversation System Message it admits
   * gets `position` = `seen.count`.
   */
  readonly seen?: SeenHistory;
}

/** What a boundary commit admitted, so the request can be built without reading again. */
export interface BoundaryCommitted {
  /** The session's revision after the commit. */
  readonly revision: number;
  /** The active Context Epoch after the commit (a new one, or the old one with its snapshot advanced). */
  readonly epoch: EpochRecord;
  /** The messages the commit appended to history, oldest first. */
  readonly appended: readonly StoredMessage[];
}

/** What a boundary reads of a session before it plans, read at once. */
export interface BoundaryRead {
  readonly session: SessionRecord;
  /** The active Context Epoch; none before the first boundary. */
  readonly epoch: EpochRecord | undefined;
  readonly pending: readonly PendingPrompt[];
  /** The messages after `afterSeq`, oldest first. */
  readonly appended: readonly StoredMessage[];
}

/** What a reply commit appended to history. */
export interface ReplyCommitted {
  readonly appended: readonly StoredMessage[];
}

/** The durable store of sessions, their messages, pending input and Context Epochs. */
export interface SessionStore extends DiscoveryLog {
  createSession(session: { id: string; location: string; provider: string; model: string }): Promise<void>;
  session(id: string): Promise<SessionRecord>;
  /**
   * Optional: every stored session, oldest first (in the order they were
   * created), as `session(id)` reads each. Both shipped stores have it; call it through
   * `listSessions(store)`, which names a store without it.
   */
  listSessions?(): Promise<SessionRecord[]>;
  /** Changes where or with what a session runs; `epochDue` asks for a new epoch at the next boundary. */
  updateSession(
    id: string,
    change: { location?: string; provider?: string; model?: string; epochDue?: Exclude<EpochReason, "initial"> },
  ): Promise<void>;
  addPrompt(id: string, text: string): Promise<void>;
  pendingPrompts(id: string): Promise<PendingPrompt[]>;
  /**
   * Durable history, oldest first; with `afterSeq`, only the messages after that sequence
   * number (history is append-only, so a reader can keep what it read and ask for the rest).
   */
  messages(id: string, afterSeq?: number): Promise<StoredMessage[]>;
  activeEpoch(id: string): Promise<EpochRecord | undefined>;
  /** Optional: what `session`, `activeEpoch`, `pendingPrompts` and `messages(id, afterSeq)` give, in one read. */
  readBoundary?(id: string, afterSeq: number): Promise<BoundaryRead>;
  /**
   * Commits one boundary in one transaction if the session is still at `revision`; else
   * `RevisionConflict`. Returns what it admitted: the new revision, the active epoch and
   * the appended messages.
   */
  commitBoundary(id: string, revision: number, commit: BoundaryCommit): Promise<BoundaryCommitted>;
  /** Persists a provider reply and the tool results of its calls, if the session is still at `revision`; frees the lease. */
  commitReply(
    id: string,
    revision: number,
    reply: { text: string; toolCalls?: readonly ToolCall[]; usage?: TokenUsage; providerContent?: ProviderContent },
    toolResults: ReadonlyArray<{ callId: string; name: string; result: string }>,
  ): Promise<ReplyCommitted>;
  /**
   * Takes or renews the in-flight lease of the session's awaited reply: succeeds when a reply
   * is awaited and the lease is free, expired at `now`, or already `lease.holder`'s.
   */
  claimLease(id: string, lease: InFlightLease, now: number): Promise<boolean>;
  /** Gives up `holder`'s lease (e.g. after a failed provider call), so a retry need not wait for it to expire. */
  releaseLease(id: string, holder: string): Promise<void>;
  /** Appends a compaction summary; the next boundary starts a new epoch. */
  commitSummary(id: string, revision: number, text: string): Promise<void>;
  close(): Promise<void>;
}

/**
 * Every session `store` holds, oldest first (`SessionStore.listSessions`); `StoreCannotList`
 * naming the store when it does not implement that optional method.
 */
export function listSessions(store: SessionStore): Promise<SessionRecord[]> {
  if (typeof store.listSessions !== "function") {
    return Promise.reject(new StoreCannotList({ store: store.constructor?.name || "the store" }));
  }
  return store.listSessions();
}

/**
 * What a boundary reads of a session (`SessionStore.readBoundary`): in one read when the
 * store offers it, else one call each.
 */
export async function readBoundaryOf(store: SessionStore, id: string, afterSeq: number): Promise<BoundaryRead> {
  if (store.readBoundary !== undefined) return store.readBoundary(id, afterSeq);
  const session = await store.session(id);
  const epoch = await store.activeEpoch(id);
  const pending = await store.pendingPrompts(id);
  return { session, epoch, pending, appended: await store.messages(id, afterSeq) };
}
