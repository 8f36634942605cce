// What both stores do with an epoch's rows (decision 094): put the epoch's record together
// from its row and its snapshot's per-key entries and check it, find the entries a commit
// must write, and read the stored system prompt. Each store only runs its own SQL.

import { messageOf } from "../../base/errors.ts";
import { parseSnapshot, type Snapshot, type SnapshotChange } from "../../system-context/index.ts";
import { SessionCorrupt } from "../errors.ts";
import type { EpochReason, EpochRecord } from "./store.ts";

/** Which epoch rows are read: the session, the epoch's number and its snapshot's version (-1: unreadable when upgraded). */
export interface EpochRows {
  readonly sessionId: string;
  readonly number: number;
  readonly snapshotVersion: number;
}

/** Which state of a session's active epoch a held record is: its number and its snapshot's version. */
export interface EpochState {
  number: number;
  snapshot_version: number;
}

/** Whether two states of an epoch are the same (a held record of one is current for the other). */
export function isSameState(a: EpochState, b: EpochState): boolean {
  return a.number === b.number && a.snapshot_version === b.snapshot_version;
}

/** An epoch's row as both stores read it, its snapshot's entries apart. */
export interface EpochRow {
  baseline: string;
  started_seq: number;
  reason: EpochReason;
  system_prompt: string | null;
  /** The epoch's own snapshot version: -1 marks it unreadable since its upgrade. */
  marked: number;
}

/**
 * Epoch `number` of session `sessionId` from its row and its snapshot's entries (key, JSON
 * of the entry), checked as a whole; `SessionCorrupt` naming what is unreadable.
 */
export function epochFrom(
  sessionId: string,
  number: number,
  row: EpochRow,
  entries: Iterable<readonly [key: string, entry: string]>,
): EpochRecord {
  const epoch = { sessionId, number, snapshotVersion: row.marked };
  return {
    number,
    baseline: row.baseline,
    snapshot: snapshotFromEntries(epoch, entries),
    startedSeq: row.started_seq,
    reason: row.reason,
    systemPrompt: systemPromptFrom(epoch, row.system_prompt),
  };
}

/** The snapshot of an epoch from its entries (key, JSON of the entry), checked as a whole; `SessionCorrupt` if it is not one. */
export function snapshotFromEntries(epoch: EpochRows, entries: Iterable<readonly [key: string, entry: string]>): Snapshot {
  const corrupt = (reason: string, cause?: unknown): never => {
    throw new SessionCorrupt({
      sessionId: epoch.sessionId,
      reason: `the Context Snapshot of epoch ${epoch.number} is corrupt: ${reason}`,
      cause,
    });
  };
  if (epoch.snapshotVersion < 0) corrupt("its stored text was not a JSON object when the store was upgraded");
  const snapshot: Record<string, unknown> = {};
  for (const [key, entry] of entries) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(entry);
    } catch (cause) {
      corrupt(`the entry of ${JSON.stringify(key)} is not JSON`, cause);
    }
    // Defined, not assigned: a stored key "__proto__" is an own key parseSnapshot refuses, not a prototype.
    Object.defineProperty(snapshot, key, { value: parsed, enumerable: true, writable: true, configurable: true });
  }
  try {
    return parseSnapshot(snapshot);
  } catch (cause) {
    return corrupt(messageOf(cause), cause);
  }
}

/**
 * The entries of `snapshot` to write against the snapshot it replaces (`previous`, whose
 * unchanged entries the new one carries as the same objects): only the changed ones with
 * their JSON, and the keys gone; without a previous one (a new epoch), every entry. A
 * snapshot `reconcile` made comes with its `change` (decision 170); without one, entries
 * are compared one by one.
 */
export function entryWrites(snapshot: Snapshot, previous: Snapshot | undefined, change?: SnapshotChange): EntryWrites {
  if (previous !== undefined && change !== undefined) {
    return {
      keys: change.written,
      entries: change.written.map((key) => JSON.stringify(snapshot[key])),
      removed: change.removed,
    };
  }
  const keys: string[] = [];
  const entries: string[] = [];
  /** Keys of `snapshot` that `previous` has too: when they are all of its keys, none was removed. */
  let kept = 0;
  for (const key of Object.keys(snapshot)) {
    const entry = snapshot[key];
    if (previous !== undefined && Object.hasOwn(previous, key)) {
      kept += 1;
      if (previous[key] === entry) continue;
    }
    keys.push(key);
    entries.push(JSON.stringify(entry));
  }
  const previousKeys = previous === undefined ? [] : Object.keys(previous);
  const removed = kept === previousKeys.length ? [] : previousKeys.filter((key) => !Object.hasOwn(snapshot, key));
  return { keys, entries, removed };
}

/** What `entryWrites` finds: the keys to write with their entries' JSON, and the keys gone. */
export interface EntryWrites {
  readonly keys: readonly string[];
  readonly entries: readonly string[];
  readonly removed: readonly string[];
}

/** An epoch's stored system prompt (JSON: a string or null); `undefined` when not recorded (an older file). */
export function systemPromptFrom(epoch: EpochRows, stored: string | null): string | null | undefined {
  if (stored === null) return undefined;
  let prompt: unknown;
  try {
    prompt = JSON.parse(stored);
  } catch (cause) {
    throw new SessionCorrupt({
      sessionId: epoch.sessionId,
      reason: `the system prompt of epoch ${epoch.number} is unreadable`,
      cause,
    });
  }
  if (prompt !== null && typeof prompt !== "string")
    throw new SessionCorrupt({ sessionId: epoch.sessionId, reason: `the system prompt of epoch ${epoch.number} is not text` });
  return prompt;
}
