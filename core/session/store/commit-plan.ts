// Owns the one commit algorithm of every store (decision 171): given a session's head (its
// revision, where its history ends, its active epoch and that epoch's snapshot version)
// and a boundary, reply or summary, the writes that commit it and what the caller is told.
// Pure: no I/O. Each store runs the writes in its own SQL, all or nothing, guarded by the
// revision the head was read at (every change of the head advances the revision).

import { SessionCorrupt } from "../errors.ts";
import type { ProviderContent, TokenUsage, ToolCall } from "../provider.ts";
import { entryWrites } from "./epoch-rows.ts";
import { type MessageRow, messageFromRow, messageRow } from "./rows.ts";
import type {
  BoundaryCommit,
  BoundaryCommitted,
  EpochReason,
  EpochRecord,
  InFlightLease,
  SeenHistory,
  SessionWhere,
  StoredMessage,
} from "./store.ts";

/** A session's head, as kept on its row in both stores. */
export interface SessionHead {
  readonly revision: number;
  /** The seq of the last message (0: none). */
  readonly lastSeq: number;
  /** The active epoch's number (0: none yet). */
  readonly epoch: number;
  /** How many Mid-Conversation System Messages advanced the active epoch's snapshot. */
  readonly snapshotVersion: number;
}

/** Everything one commit writes. A store applies it all only if the session is still at `revision`. */
export interface Writes {
  /** The revision the head was read at (the guard). */
  readonly revision: number;
  /** The head after the commit (its revision is `revision + 1`). */
  readonly head: SessionHead;
  /** A reply awaited after the commit, none, or as it was (`"kept"`: a summary, between turns). */
  readonly awaitingReply: boolean | "kept";
  /** The lease after the commit: taken, freed (`null`) or as it was. */
  readonly lease: InFlightLease | null | "kept";
  /** The due epoch transition: settled (cleared), kept, or set to compaction. */
  readonly epochDue: "settled" | "kept" | "compaction";
  readonly seen?: SeenHistory;
  readonly where?: SessionWhere;
  /**
   * The commit only records what the caller's history was (an engine boundary that admitted
   * nothing): no message, epoch, snapshot entry or lease. A store may skip waiting for the
   * disk on it: lost to a power failure, the next boundary compares the caller's history with
   * the one seen before, which it still extends.
   */
  readonly bookkeeping?: true;
  /** A new epoch's row. */
  readonly newEpoch?: {
    readonly number: number;
    readonly baseline: string;
    readonly startedSeq: number;
    readonly reason: EpochReason;
    /** The system prompt as JSON (a string or null). */
    readonly systemPrompt: string;
  };
  /** Snapshot entries of epoch `epoch` to upsert (keys and their entries' JSON) and to delete. */
  readonly entries: {
    readonly epoch: number;
    readonly keys: readonly string[];
    readonly entries: readonly string[];
    readonly removed: readonly string[];
  };
  /** Pending prompts promoted, with the seq of the message each becomes. */
  readonly promote: ReadonlyArray<{ readonly id: number; readonly seq: number }>;
  /** Messages appended, in seq order from `head.lastSeq` of the head read + 1. */
  readonly messages: readonly MessageRow[];
}

const noEntries = { keys: [], entries: [], removed: [] } as const;

/**
 * The writes of a Safe Provider-Turn Boundary over `head`, whose active epoch is `active`
 * (as it stands at `head`), and what the caller is told.
 */
export function planBoundary(
  id: string,
  head: SessionHead,
  active: EpochRecord | undefined,
  commit: BoundaryCommit,
): { writes: Writes; committed: BoundaryCommitted } {
  const { newEpoch, systemUpdate, seen } = commit;
  let seq = head.lastSeq + 1;
  let epoch: EpochRecord;
  let entries: Writes["entries"];
  let version: number;
  let epochRow: Writes["newEpoch"];
  if (newEpoch !== undefined) {
    const number = head.epoch + 1;
    const { baseline, snapshot, reason, systemPrompt } = newEpoch;
    epoch = { number, baseline, snapshot, startedSeq: seq, reason, systemPrompt };
    epochRow = { number, baseline, startedSeq: seq, reason, systemPrompt: JSON.stringify(systemPrompt) };
    // Every entry of the epoch's snapshot (an update in the same commit writes its own instead).
    entries = { epoch: number, ...entryWrites(systemUpdate?.snapshot ?? snapshot, undefined) };
    version = 0;
  } else {
    if (active === undefined || head.epoch === 0) {
      throw new SessionCorrupt({ sessionId: id, reason: "no Context Epoch after a boundary" });
    }
    epoch = active;
    entries = { epoch: active.number, ...noEntries };
    version = head.snapshotVersion;
  }
  const messages: MessageRow[] = [];
  const promote: Array<{ id: number; seq: number }> = [];
  for (const prompt of commit.promote) {
    promote.push({ id: prompt.id, seq });
    messages.push(messageRow(seq++, "user", prompt.text, epoch.number));
  }
  if (systemUpdate !== undefined) {
    const data = seen === undefined ? undefined : { position: seen.count };
    messages.push(messageRow(seq++, "system-update", systemUpdate.text, epoch.number, data));
    if (newEpoch === undefined) {
      entries = { epoch: epoch.number, ...entryWrites(systemUpdate.snapshot, epoch.snapshot, systemUpdate.change) };
    }
    epoch = { ...epoch, snapshot: systemUpdate.snapshot };
    version += 1;
  }
  const isBookkeeping = seen !== undefined && newEpoch === undefined && messages.length === 0 && !commit.settlesEpochDue;
  const writes: Writes = {
    revision: head.revision,
    head: { revision: head.revision + 1, lastSeq: seq - 1, epoch: epoch.number, snapshotVersion: version },
    awaitingReply: seen === undefined,
    lease: seen === undefined ? (commit.lease ?? null) : null,
    epochDue: commit.settlesEpochDue ? "settled" : "kept",
    ...(seen === undefined ? {} : { seen }),
    ...(isBookkeeping ? { bookkeeping: true } : {}),
    ...(newEpoch?.where === undefined ? {} : { where: newEpoch.where }),
    ...(epochRow === undefined ? {} : { newEpoch: epochRow }),
    entries,
    promote,
    messages,
  };
  return { writes, committed: { revision: head.revision + 1, epoch, appended: storedMessages(id, messages) } };
}

/** A provider reply and its tool calls' results, as `commitReply` takes them. */
export interface ReplyToCommit {
  readonly text: string;
  readonly toolCalls?: readonly ToolCall[];
  readonly usage?: TokenUsage;
  readonly providerContent?: ProviderContent;
}

/** The writes of a provider reply and its tool results over `head`: the awaited reply is settled and its lease freed. */
export function planReply(
  id: string,
  head: SessionHead,
  reply: ReplyToCommit,
  toolResults: ReadonlyArray<{ readonly callId: string; readonly name: string; readonly result: string }>,
): { writes: Writes; appended: StoredMessage[] } {
  let seq = head.lastSeq + 1;
  const toolCalls = reply.toolCalls !== undefined && reply.toolCalls.length > 0 ? reply.toolCalls : undefined;
  const messages = [
    messageRow(seq++, "assistant", reply.text, head.epoch, toolCalls === undefined ? undefined : { toolCalls }, {
      usage: reply.usage,
      providerContent: reply.providerContent,
    }),
  ];
  for (const result of toolResults) {
    messages.push(messageRow(seq++, "tool", result.result, head.epoch, { callId: result.callId, name: result.name }));
  }
  return { writes: between(head, messages, false, null, "kept"), appended: storedMessages(id, messages) };
}

/** The writes of a compaction summary over `head`: the next boundary starts a new epoch. */
export function planSummary(head: SessionHead, text: string): Writes {
  return between(head, [messageRow(head.lastSeq + 1, "summary", text, head.epoch)], "kept", "kept", "compaction");
}

function between(
  head: SessionHead,
  messages: readonly MessageRow[],
  awaitingReply: Writes["awaitingReply"],
  lease: Writes["lease"],
  epochDue: Writes["epochDue"],
): Writes {
  return {
    revision: head.revision,
    head: { ...head, revision: head.revision + 1, lastSeq: head.lastSeq + messages.length },
    awaitingReply,
    lease,
    epochDue,
    entries: { epoch: head.epoch, ...noEntries },
    promote: [],
    messages,
  };
}

/** Exactly what reading the rows back gives, so a request built from them matches one built after a restart. */
function storedMessages(id: string, rows: readonly MessageRow[]): StoredMessage[] {
  return rows.map((row) => messageFromRow(id, row));
}
