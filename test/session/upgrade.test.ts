// Databases of today's schema (before the engine's sessions and, in PostgreSQL, before the
// head on the session row: issue 32, decisions 104 and 171) upgrade in place, and their
// sessions go on: the head is filled from the rows, and the next commits continue the history.

import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { expect } from "chai";
import pg from "pg";
import { PostgresSessionStore } from "../../core/session/store/postgres.ts";
import { migrations as postgresMigrations } from "../../core/session/store/postgres-schema.ts";
import { SqliteSessionStore, sessionsFile } from "../../core/session/store/sqlite.ts";
import { migrations as sqliteMigrations } from "../../core/session/store/sqlite-schema.ts";
import type { SessionStore } from "../../core/session/store/store.ts";
import { describeWithPostgres } from "./postgres-server.ts";

/** The rows of a session in the middle of its second epoch, whose snapshot one update advanced; one prompt pending. */
const rows = `
  INSERT INTO sessions (id, location, provider, model, revision) VALUES ('busy', '/', 'p', 'm', 4);
  INSERT INTO epochs (session_id, number, baseline, started_seq, reason, system_prompt)
    VALUES ('busy', 1, 'first', 1, 'initial', 'null'), ('busy', 2, 'second', 4, 'compaction', 'null');
  INSERT INTO snapshot_entries (session_id, epoch, key, entry) VALUES ('busy', 2, 'a/b', '{"value":7}');
  INSERT INTO messages (session_id, seq, role, text, epoch) VALUES
    ('busy', 1, 'user', 'one', 1), ('busy', 2, 'assistant', 'ok', 1), ('busy', 3, 'summary', 'so far', 1),
    ('busy', 4, 'user', 'two', 2), ('busy', 5, 'system-update', 'b is 7', 2), ('busy', 6, 'assistant', 'fine', 2);
  INSERT INTO pending_prompts (session_id, text) VALUES ('busy', 'three');`;

/** The upgraded session reads back as it was and its next boundary and reply continue its history. */
async function goesOn(store: SessionStore): Promise<void> {
  const read = await store.readBoundary?.("busy", 0);
  if (read === undefined) throw new Error("readBoundary missing");
  expect(read.session).to.include({ revision: 4, isAwaitingReply: false });
  expect(read.session.seen).to.equal(undefined);
  expect(read.epoch).to.deep.include({ number: 2, baseline: "second", startedSeq: 4, reason: "compaction" });
  expect(read.epoch?.snapshot).to.deep.equal({ "a/b": { value: 7 } });
  expect(read.pending.map((p) => p.text)).to.deep.equal(["three"]);
  expect(read.appended.map((m) => m.seq)).to.deep.equal([1, 2, 3, 4, 5, 6]);
  const committed = await store.commitBoundary("busy", 4, {
    promote: read.pending,
    systemUpdate: { text: "b is 8", snapshot: { "a/b": { value: 8 } } },
    settlesEpochDue: false,
  });
  expect(committed.appended.map((m) => [m.seq, m.role, m.text, m.epoch])).to.deep.equal([
    [7, "user", "three", 2],
    [8, "system-update", "b is 8", 2],
  ]);
  await store.commitReply("busy", 5, { text: "done" }, []);
  expect((await store.messages("busy", 6)).map((m) => [m.seq, m.role])).to.deep.equal([
    [7, "user"],
    [8, "system-update"],
    [9, "assistant"],
  ]);
  expect((await store.activeEpoch("busy"))?.snapshot).to.deep.equal({ "a/b": { value: 8 } });
}

describe("upgrade from today's schema: SQLite (version 8)", () => {
  it("adds the engine's columns and the session goes on", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "upgrade-"));
    const file = sessionsFile(dir);
    const raw = new Database(file);
    for (const script of sqliteMigrations.slice(0, 8)) raw.exec(script);
    raw.pragma("user_version = 8");
    raw.exec(rows);
    // Today's store kept the head on the row: where history ends, the epoch, one update.
    raw.exec("UPDATE sessions SET last_seq = 6, epoch = 2, snapshot_version = 1 WHERE id = 'busy'");
    raw.close();
    const store = new SqliteSessionStore(file);
    try {
      expect(store.schemaVersion).to.equal(sqliteMigrations.length);
      await goesOn(store);
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describeWithPostgres("upgrade from today's schema: PostgreSQL (version 4)", (server) => {
  it("puts the head on the session row from its rows, and the session goes on", async () => {
    const schema = `today_${process.pid}`;
    const client = new pg.Client({ connectionString: server().url });
    await client.connect();
    try {
      await client.query(`CREATE SCHEMA ${schema}; SET search_path TO ${schema}`);
      for (const script of postgresMigrations.slice(0, 4)) await client.query(script);
      await client.query("CREATE TABLE schema_version (version INTEGER NOT NULL); INSERT INTO schema_version VALUES (4)");
      await client.query(rows);
      // Today's store counted an epoch's updates on its row.
      await client.query("UPDATE epochs SET snapshot_version = 1 WHERE session_id = 'busy' AND number = 2");
    } finally {
      await client.end();
    }
    const store = await PostgresSessionStore.open({ connectionString: server().url, schema, poolSize: 2 });
    try {
      await goesOn(store);
    } finally {
      await store.close();
    }
  });
});
