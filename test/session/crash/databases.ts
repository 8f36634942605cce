// Where a crash trial's sessions live: a SQLite file in the trial's data folder, or a
// schema of a PostgreSQL database. The worker, the checker and the harness reach the
// database only through this, so the same trials and invariants run against both stores.

import Database from "better-sqlite3";
import pg from "pg";
import { PostgresSessionStore } from "../../../core/session/store/postgres.ts";
import { SqliteSessionStore, sessionsFile } from "../../../core/session/store/sqlite.ts";
import type { SessionStore } from "../../../core/session/store/store.ts";

export interface SessionRow {
  id: string;
  /** 1 or 0 on both engines. */
  awaiting_reply: number;
  revision: number;
}
export interface MessageRow {
  seq: number;
  role: string;
  text: string;
  epoch: number;
  data: string | null;
}
export interface EpochRow {
  number: number;
  baseline: string;
  /** The Context Snapshot as JSON text. */
  snapshot: string;
  started_seq: number;
}
export interface PromptRow {
  id: number;
  text: string;
  promoted_seq: number | null;
}

/** The raw rows of a crash database, read past the store (what it stored, not what it makes of it). */
export interface Rows {
  sessions(): Promise<SessionRow[]>;
  messages(sessionId: string): Promise<MessageRow[]>;
  epochs(sessionId: string): Promise<EpochRow[]>;
  prompts(sessionId: string): Promise<PromptRow[]>;
  close(): Promise<void>;
}

/** One crash database: how a worker names it, how the checker opens it. */
export interface CrashDatabase {
  /** For messages: the file, or the URL and schema. */
  readonly name: string;
  /** What the worker is given after its data folder, seed and tag (empty: SQLite in the data folder). */
  readonly workerArgs: readonly string[];
  /** Opens the store a host would. */
  openStore(): Promise<SessionStore>;
  /** Opens the rows for reading. */
  rows(): Promise<Rows>;
}

/** The SQLite file `<dataDir>/sessions.db`. */
export function sqliteDatabase(dataDir: string): CrashDatabase {
  const file = sessionsFile(dataDir);
  return {
    name: file,
    workerArgs: [],
    openStore: async () => new SqliteSessionStore(file),
    rows: async () => {
      const db = new Database(file, { readonly: true });
      const all = <T>(sql: string, ...args: unknown[]) => Promise.resolve(db.prepare(sql).all(...args) as T[]);
      return {
        sessions: () => all<SessionRow>("SELECT id, awaiting_reply, revision FROM sessions ORDER BY id"),
        messages: (id) =>
          all<MessageRow>("SELECT seq, role, text, epoch, data FROM messages WHERE session_id = ? ORDER BY seq", id),
        epochs: (id) =>
          // The snapshot as one JSON object text, put together from its entries (one row per key).
          all<EpochRow>(
            `SELECT e.number, e.baseline, e.started_seq,
               (SELECT json_group_object(s.key, json(s.entry)) FROM snapshot_entries s
                WHERE s.session_id = e.session_id AND s.epoch = e.number) AS snapshot
             FROM epochs e WHERE e.session_id = ? ORDER BY e.number`,
            id,
          ),
        prompts: (id) =>
          all<PromptRow>("SELECT id, text, promoted_seq FROM pending_prompts WHERE session_id = ? ORDER BY id", id),
        close: async () => {
          db.close();
        },
      };
    },
  };
}

/** The schema `schema` of the PostgreSQL database at `url`. */
export function postgresDatabase(url: string, schema: string): CrashDatabase {
  return {
    name: `${url.replace(/\/\/[^@/]*@/, "//")} (schema ${schema})`,
    workerArgs: [url, schema],
    openStore: () => PostgresSessionStore.open({ connectionString: url, schema, poolSize: 2 }),
    rows: async () => {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      await client.query(`SET search_path TO ${pg.escapeIdentifier(schema)}`);
      // One snapshot for every read: the killed worker's last statement may still be running
      // on the server and commit between two reads (the session's row read before a reply
      // commit, its messages after it).
      await client.query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
      const all = async <T>(sql: string, ...args: unknown[]) => (await client.query(sql, args)).rows as T[];
      return {
        sessions: () =>
          all<SessionRow>(
            "SELECT id, CASE WHEN awaiting_reply THEN 1 ELSE 0 END AS awaiting_reply, revision FROM sessions ORDER BY id",
          ),
        messages: (id) =>
          all<MessageRow>("SELECT seq, role, text, epoch, data FROM messages WHERE session_id = $1 ORDER BY seq", id),
        epochs: (id) =>
          // The snapshot as one JSON object text, put together from its entries (one row per key).
          all<EpochRow>(
            `SELECT e.number, e.baseline, e.started_seq,
               COALESCE((SELECT json_object_agg(s.key, s.entry::json) FROM snapshot_entries s
                 WHERE s.session_id = e.session_id AND s.epoch = e.number)::text, '{}') AS snapshot
             FROM epochs e WHERE e.session_id = $1 ORDER BY e.number`,
            id,
          ),
        prompts: (id) =>
          all<PromptRow>("SELECT id, text, promoted_seq FROM pending_prompts WHERE session_id = $1 ORDER BY id", id),
        close: () => client.end(),
      };
    },
  };
}

/** The database a worker was pointed at by its arguments after `<dataDir> <seed> <tag>`. */
export function databaseOf(dataDir: string, rest: readonly string[]): CrashDatabase {
  const [url, schema] = rest;
  if (url === undefined) return sqliteDatabase(dataDir);
  if (schema === undefined) throw new Error("a PostgreSQL crash database needs <url> <schema>");
  return postgresDatabase(url, schema);
}
