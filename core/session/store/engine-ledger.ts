// Owns the context engine's durable ledger (decision 102): per session of a caller's own
// agent loop, the active Context Epoch (Baseline verbatim, snapshot, reason), how much of
// the caller's history the engine has seen (a count and a chained digest) and the
// Mid-Conversation System Messages admitted in the epoch, each with its position in the
// caller's history. One SQLite file through better-sqlite3 (WAL); every commit is one
// transaction guarded by the session's revision, so two processes admit a change once.

import { mkdirSync } from "node:fs";
import path from "node:path";
import Database from "better-sqlite3";
import { messageOf } from "../../base/errors.ts";
import { parseSnapshot, type Snapshot } from "../../system-context/index.ts";
import { RevisionConflict, SessionCorrupt, StoreFailed } from "../errors.ts";
import type { EpochReason } from "./store.ts";
import { busyTryMs, waitForWriteLock } from "./write-lock.ts";

/** A Mid-Conversation System Message admitted by the engine: it belongs after the caller's message number `position`. */
export interface AdmittedUpdate {
  /** How many of the caller's messages come before it. */
  readonly position: number;
  readonly text: string;
}

/** One session as the engine's ledger keeps it. */
export interface LedgerRecord {
  readonly id: string;
  /** Advances with every commit; a commit names the revision it read. */
  readonly revision: number;
  readonly provider: string;
  readonly model: string;
  readonly location: string;
  readonly epoch: {
    readonly number: number;
    readonly reason: EpochReason;
    readonly baseline: string;
    readonly snapshot: Snapshot;
  };
  /** How many of the caller's messages the last boundary saw, and their chained digest. */
  readonly seenCount: number;
  readonly seenDigest: string;
  /** The epoch's admitted updates, by position. */
  readonly updates: readonly AdmittedUpdate[];
}

/** What one boundary commits: the session's new state, and a new epoch or one more update. */
export interface LedgerCommit {
  readonly provider: string;
  readonly model: string;
  readonly location: string;
  readonly seenCount: number;
  readonly seenDigest: string;
  /** A fresh epoch (its updates start empty). */
  readonly newEpoch?: { readonly reason: EpochReason; readonly baseline: string; readonly snapshot: Snapshot };
  /** One more update of the active epoch, with the snapshot it advances to. */
  readonly update?: AdmittedUpdate & { readonly snapshot: Snapshot };
}

/** The port the engine keeps its ledger through. */
export interface EngineLedger {
  read(id: string): Promise<LedgerRecord | undefined>;
  /**
   * Commits a boundary against `revision` (the one read; `undefined`: the session is new).
   * Throws `RevisionConflict` when another writer committed first.
   */
  commit(id: string, revision: number | undefined, commit: LedgerCommit): Promise<LedgerRecord>;
  close(): Promise<void>;
}

const schema = `
  CREATE TABLE engine_sessions (
    id TEXT PRIMARY KEY,
    revision INTEGER NOT NULL,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    location TEXT NOT NULL,
    epoch INTEGER NOT NULL,
    reason TEXT NOT NULL CHECK (reason IN ('initial', 'compaction', 'switch', 'move', 'replacement')),
    baseline TEXT NOT NULL,
    snapshot TEXT NOT NULL,
    seen_count INTEGER NOT NULL,
    seen_digest TEXT NOT NULL
  ) STRICT;
  CREATE TABLE engine_updates (
    session_id TEXT NOT NULL REFERENCES engine_sessions(id) ON DELETE CASCADE,
    epoch INTEGER NOT NULL,
    ordinal INTEGER NOT NULL,
    position INTEGER NOT NULL,
    text TEXT NOT NULL,
    PRIMARY KEY (session_id, epoch, ordinal)
  ) STRICT;`;

interface SessionRow {
  id: string;
  revision: number;
  provider: string;
  model: string;
  location: string;
  epoch: number;
  reason: EpochReason;
  baseline: string;
  snapshot: string;
  seen_count: number;
  seen_digest: string;
}

/** The columns both ledgers keep of a session. @internal */
export interface LedgerRow {
  readonly id: string;
  readonly revision: number;
  readonly provider: string;
  readonly model: string;
  readonly location: string;
  readonly epoch: number;
  readonly reason: EpochReason;
  readonly baseline: string;
  readonly seen_count: number;
  readonly seen_digest: string;
}

/**
 * A session's record from its row, its snapshot's JSON (read by `json`) checked, and the
 * epoch's updates; `SessionCorrupt` naming `where` when the snapshot is not one. @internal
 */
export function ledgerRecord(
  row: LedgerRow,
  json: () => unknown,
  updates: readonly AdmittedUpdate[],
  where: string,
): LedgerRecord {
  let snapshot: Snapshot;
  try {
    snapshot = parseSnapshot(json());
  } catch (cause) {
    throw new SessionCorrupt({
      sessionId: row.id,
      reason: `the Context Snapshot in ${where} is corrupt: ${messageOf(cause)}`,
      cause,
    });
  }
  return {
    id: row.id,
    revision: row.revision,
    provider: row.provider,
    model: row.model,
    location: row.location,
    epoch: { number: row.epoch, reason: row.reason, baseline: row.baseline, snapshot },
    seenCount: row.seen_count,
    seenDigest: row.seen_digest,
    updates: [...updates],
  };
}

/**
 * A commit's checks and the session's next head, for both ledgers (the snapshot is each
 * ledger's own): `RevisionConflict` when `current` is not at `revision`, `SessionCorrupt`
 * when a new session's first commit starts no epoch. @internal
 */
export function nextLedgerRow(
  id: string,
  current: LedgerRow | undefined,
  revision: number | undefined,
  commit: LedgerCommit,
): LedgerRow {
  if (current?.revision !== revision) throw new RevisionConflict({ sessionId: id, expected: revision ?? -1 });
  if (current === undefined && commit.newEpoch === undefined) {
    throw new SessionCorrupt({ sessionId: id, reason: "a new session's first boundary must start an epoch" });
  }
  const previous = current as LedgerRow;
  return {
    id,
    revision: (current?.revision ?? -1) + 1,
    provider: commit.provider,
    model: commit.model,
    location: commit.location,
    epoch: commit.newEpoch === undefined ? previous.epoch : (current?.epoch ?? 0) + 1,
    reason: commit.newEpoch?.reason ?? previous.reason,
    baseline: commit.newEpoch?.baseline ?? previous.baseline,
    seen_count: commit.seenCount,
    seen_digest: commit.seenDigest,
  };
}

/** The engine's ledger file in a data folder. */
export function ledgerFile(dataDir: string): string {
  return path.join(dataDir, "engine.db");
}

/** The engine's ledger in one SQLite file. */
export class SqliteEngineLedger implements EngineLedger {
  readonly #db: Database.Database;
  readonly #file: string;
  /** Per session, the record last read or written (its revision says whether it is current). */
  readonly #known = new Map<string, LedgerRecord>();
  readonly #select: Database.Statement;
  readonly #updates: Database.Statement;
  readonly #upsert: Database.Statement;
  readonly #insertUpdate: Database.Statement;
  /** A boundary within the epoch: the row's head, and the snapshot only when an update changed it. */
  readonly #advance: Database.Statement;
  readonly #advanceWithSnapshot: Database.Statement;

  constructor(file: string) {
    this.#file = file;
    try {
      if (file !== ":memory:") mkdirSync(path.dirname(file), { recursive: true });
      this.#db = new Database(file);
      this.#db.pragma("journal_mode = WAL");
      this.#db.pragma("foreign_keys = ON");
      this.#db.pragma("busy_timeout = 1000");
      if (this.#db.pragma("user_version", { simple: true }) === 0) {
        this.#db.transaction(() => {
          this.#db.exec(schema);
          this.#db.pragma("user_version = 1");
        })();
      }
      // Then another process's write lock is waited for a few ms per try, and in timers for up to 1 s (decision 175).
      this.#db.pragma(`busy_timeout = ${busyTryMs}`);
      this.#select = this.#db.prepare("SELECT * FROM engine_sessions WHERE id = ?");
      this.#updates = this.#db.prepare(
        "SELECT position, text FROM engine_updates WHERE session_id = ? AND epoch = ? ORDER BY ordinal",
      );
      this.#upsert = this.#db.prepare(
        `INSERT INTO engine_sessions (id, revision, provider, model, location, epoch, reason, baseline, snapshot, seen_count, seen_digest)
         VALUES (@id, @revision, @provider, @model, @location, @epoch, @reason, @baseline, @snapshot, @seen_count, @seen_digest)
         ON CONFLICT (id) DO UPDATE SET revision = excluded.revision, provider = excluded.provider, model = excluded.model,
           location = excluded.location, epoch = excluded.epoch, reason = excluded.reason, baseline = excluded.baseline,
           snapshot = excluded.snapshot, seen_count = excluded.seen_count, seen_digest = excluded.seen_digest`,
      );
      const head =
        "revision = @revision, provider = @provider, model = @model, location = @location, seen_count = @seen_count, seen_digest = @seen_digest";
      this.#advance = this.#db.prepare(`UPDATE engine_sessions SET ${head} WHERE id = @id`);
      this.#advanceWithSnapshot = this.#db.prepare(`UPDATE engine_sessions SET ${head}, snapshot = @snapshot WHERE id = @id`);
      this.#insertUpdate = this.#db.prepare(
        "INSERT INTO engine_updates (session_id, epoch, ordinal, position, text) VALUES (?, ?, ?, ?, ?)",
      );
    } catch (error) {
      throw new StoreFailed({
        file,
        operation: "open the context engine's ledger (check that the data folder is writable and the file is this ledger's)",
        cause: error,
      });
    }
  }

  async read(id: string): Promise<LedgerRecord | undefined> {
    const row = this.#select.get(id) as SessionRow | undefined;
    if (row === undefined) return undefined;
    // The record last read or written at this revision is still the session's.
    const known = this.#known.get(id);
    if (known !== undefined && known.revision === row.revision) return known;
    return this.#remember(this.#record(row, this.#updates.all(id, row.epoch) as AdmittedUpdate[]));
  }

  async commit(id: string, revision: number | undefined, commit: LedgerCommit): Promise<LedgerRecord> {
    const transaction = this.#db.transaction((): LedgerRecord => {
      const current = this.#select.get(id) as SessionRow | undefined;
      const head = nextLedgerRow(id, current, revision, commit);
      const known = this.#known.get(id);
      const before =
        current === undefined
          ? undefined
          : known !== undefined && known.revision === current.revision
            ? known
            : this.#record(current, this.#updates.all(id, current.epoch) as AdmittedUpdate[]);
      const { epoch } = head;
      const snapshot = commit.newEpoch?.snapshot ?? commit.update?.snapshot;
      const row: SessionRow = {
        ...head,
        snapshot: snapshot === undefined ? (current as SessionRow).snapshot : JSON.stringify(snapshot),
      };
      if (current === undefined || commit.newEpoch !== undefined) this.#upsert.run(row);
      else if (snapshot !== undefined) this.#advanceWithSnapshot.run(row);
      else this.#advance.run(row);
      const updates = commit.newEpoch === undefined ? [...(before?.updates ?? [])] : [];
      if (commit.update !== undefined) {
        this.#insertUpdate.run(id, epoch, updates.length, commit.update.position, commit.update.text);
        updates.push({ position: commit.update.position, text: commit.update.text });
      }
      return this.#remember({
        id,
        revision: row.revision,
        provider: row.provider,
        model: row.model,
        location: row.location,
        epoch: {
          number: epoch,
          reason: row.reason,
          baseline: row.baseline,
          snapshot: snapshot ?? (before as LedgerRecord).epoch.snapshot,
        },
        seenCount: row.seen_count,
        seenDigest: row.seen_digest,
        updates,
      });
    });
    return waitForWriteLock(() => transaction.immediate(), 1000);
  }

  #remember(record: LedgerRecord): LedgerRecord {
    this.#known.set(record.id, record);
    return record;
  }

  async close(): Promise<void> {
    if (this.#db.open) this.#db.close();
  }

  #record(row: SessionRow, updates: readonly AdmittedUpdate[]): LedgerRecord {
    return ledgerRecord(row, () => JSON.parse(row.snapshot), updates, this.#file);
  }
}
