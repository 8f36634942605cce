// The SQLite session store on a real file: schema version, WAL, foreign keys, and
// migrations that run once per file.

import path from "node:path";
import Database from "better-sqlite3";
import { expect } from "chai";
import { SqliteSessionStore, sessionsFile } from "../../core/session/store/sqlite.ts";
import { migrations } from "../../core/session/store/sqlite-schema.ts";
import { listSessions, SessionCorrupt, type SessionStore, StoreCannotList } from "../../core/session/store/store.ts";
import * as SystemContext from "../../core/system-context.ts";
import { tempFolder } from "./fixtures.ts";

/** Opens a store while observing its own better-sqlite3 connection and the SQL scripts it executes. */
function openObserved(file: string): { store: SqliteSessionStore; connection: Database.Database; scripts: string[] } {
  const prototype = Database.prototype;
  const { exec, pragma } = prototype;
  const connections = new Set<Database.Database>();
  const scripts: string[] = [];
  prototype.exec = function (this: Database.Database, source: string) {
    connections.add(this);
    scripts.push(source);
    return exec.call(this, source);
  };
  prototype.pragma = function (this: Database.Database, source: string, options?: Database.PragmaOptions) {
    connections.add(this);
    return pragma.call(this, source, options);
  } as Database.Database["pragma"];
  try {
    const store = new SqliteSessionStore(file);
    const [connection] = connections;
    if (connections.size !== 1 || connection === undefined) throw new Error(`expected one connection, saw ${connections.size}`);
    return { store, connection, scripts };
  } finally {
    prototype.exec = exec;
    prototype.pragma = pragma;
  }
}

describe("session store: SQLite", () => {
  let folder: ReturnType<typeof tempFolder>;

  beforeEach(() => {
    folder = tempFolder("store");
  });

  afterEach(() => {
    folder.remove();
  });

  it("records its schema version, runs in WAL mode with foreign keys on, and a second open does not migrate again", async () => {
    const file = sessionsFile(path.join(folder.path, "nested", "data"));
    const first = openObserved(file);
    const version = first.store.schemaVersion;
    expect(version).to.be.greaterThan(0);
    expect(first.scripts, "one script per migration on a fresh file").to.have.length(version);
    expect(first.connection.pragma("journal_mode", { simple: true })).to.equal("wal");
    expect(first.connection.pragma("foreign_keys", { simple: true })).to.equal(1);
    // Enforced on the store's own connection, not just declared.
    expect(() =>
      first.connection
        .prepare("INSERT INTO messages (session_id, seq, role, text, epoch) VALUES ('nobody', 1, 'user', 'x', 1)")
        .run(),
    ).to.throw(/FOREIGN KEY/);
    await first.store.createSession({ id: "s1", location: folder.path, provider: "p", model: "m" });
    await first.store.addPrompt("s1", "hello");
    await first.store.close();

    const raw = new Database(file, { readonly: true });
    try {
      expect(raw.pragma("user_version", { simple: true })).to.equal(version);
      expect(raw.pragma("journal_mode", { simple: true }), "WAL is a property of the file").to.equal("wal");
      const tables = raw.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").pluck().all();
      expect(tables).to.include.members(["epochs", "messages", "pending_prompts", "sessions"]);
    } finally {
      raw.close();
    }

    const second = openObserved(file);
    try {
      expect(second.scripts, "no migration runs on a current file").to.deep.equal([]);
      expect(second.store.schemaVersion).to.equal(version);
      expect(second.connection.pragma("foreign_keys", { simple: true })).to.equal(1);
      expect(await second.store.session("s1")).to.include({ id: "s1", revision: 0 });
      expect((await second.store.pendingPrompts("s1")).map((p) => p.text)).to.deep.equal(["hello"]);
    } finally {
      await second.store.close();
    }
  });

  it("refuses a file written by a newer context-host, naming the file", async () => {
    const file = sessionsFile(folder.path);
    await new SqliteSessionStore(file).close();
    const raw = new Database(file);
    raw.pragma("user_version = 999");
    raw.close();
    expect(() => new SqliteSessionStore(file)).to.throw(`${file}: schema version 999 is newer than this context-host`);
  });

  it("puts each session's head (where history ends, its epoch, its snapshot's version) on its row and keeps messages by their key when it upgrades a file, and goes on from there", async () => {
    const file = sessionsFile(folder.path);
    // A file as the release before the head on the session's row left it (schema version 6).
    const raw = new Database(file);
    for (const script of migrations.slice(0, 6)) raw.exec(script);
    raw.pragma("user_version = 6");
    raw.exec(`INSERT INTO sessions (id, location, provider, model, revision) VALUES ('busy', '/', 'p', 'm', 4), ('new', '/', 'p', 'm', 0);
      INSERT INTO epochs (session_id, number, baseline, started_seq, reason, system_prompt, snapshot_version)
        VALUES ('busy', 1, 'first', 1, 'initial', 'null', 0), ('busy', 2, 'second', 3, 'compaction', 'null', 3);
      INSERT INTO snapshot_entries (session_id, epoch, key, entry) VALUES ('busy', 2, 'a/b', '{"value":7}');
      INSERT INTO messages (session_id, seq, role, text, epoch) VALUES
        ('busy', 1, 'user', 'one', 1), ('busy', 2, 'assistant', 'ok', 1), ('busy', 3, 'summary', 'so far', 1),
        ('busy', 4, 'user', 'two', 2), ('busy', 5, 'system-update', 'b is 7', 2);
      INSERT INTO pending_prompts (session_id, text) VALUES ('busy', 'three');`);
    raw.close();

    const store = new SqliteSessionStore(file);
    try {
      const heads = new Database(file, { readonly: true });
      expect(heads.prepare("SELECT id, last_seq, epoch, snapshot_version FROM sessions ORDER BY id").all()).to.deep.equal([
        { id: "busy", last_seq: 5, epoch: 2, snapshot_version: 3 },
        { id: "new", last_seq: 0, epoch: 0, snapshot_version: 0 },
      ]);
      expect(
        (heads.prepare("SELECT sql FROM sqlite_schema WHERE name = 'messages'").get() as { sql: string }).sql,
        "messages kept by their key",
      ).to.match(/WITHOUT ROWID$/);
      expect(heads.prepare("SELECT seq, role, text FROM messages WHERE session_id = 'busy' ORDER BY seq").all()).to.deep.equal([
        { seq: 1, role: "user", text: "one" },
        { seq: 2, role: "assistant", text: "ok" },
        { seq: 3, role: "summary", text: "so far" },
        { seq: 4, role: "user", text: "two" },
        { seq: 5, role: "system-update", text: "b is 7" },
      ]);
      heads.close();
      const busy = await store.readBoundary("busy", 4);
      expect(busy.epoch).to.include({ number: 2, baseline: "second", startedSeq: 3 });
      expect(busy.epoch?.snapshot).to.deep.equal({ "a/b": { value: 7 } });
      expect(busy.pending.map((prompt) => prompt.text)).to.deep.equal(["three"]);
      expect(busy.appended.map((message) => message.seq)).to.deep.equal([5]);
      const committed = await store.commitBoundary("busy", busy.session.revision, {
        promote: busy.pending,
        systemUpdate: { text: "b is 8", snapshot: SystemContext.parseSnapshot({ "a/b": { value: 8 } }) },
        settlesEpochDue: false,
      });
      expect(committed.appended.map((message) => [message.seq, message.role, message.epoch])).to.deep.equal([
        [6, "user", 2],
        [7, "system-update", 2],
      ]);
      const replied = await store.commitReply("busy", committed.revision, { text: "fine" }, []);
      expect(replied.appended.map((message) => [message.seq, message.epoch])).to.deep.equal([[8, 2]]);
      expect((await store.activeEpoch("busy"))?.snapshot).to.deep.equal({ "a/b": { value: 8 } });
      expect(await store.activeEpoch("new")).to.equal(undefined);
      expect((await store.readBoundary("new", 0)).epoch).to.equal(undefined);
    } finally {
      await store.close();
    }
  });

  it("moves each epoch's snapshot text into one row per key when it upgrades a file, and names an epoch whose text was unreadable", async () => {
    const file = sessionsFile(folder.path);
    // A file as the release before per-key snapshots left it (schema version 5).
    const raw = new Database(file);
    for (const script of migrations.slice(0, 5)) raw.exec(script);
    raw.pragma("user_version = 5");
    const snapshot = {
      "core/date": { value: "2026-12-04" },
      "git/branch": { value: { name: "main", ahead: 2 }, removed: "No branch now." },
      "a/list": { value: [1, "two", null, true] },
      "a/flag": { value: false },
    };
    const insertSession = raw.prepare("INSERT INTO sessions (id, location, provider, model) VALUES (?, '/', 'p', 'm')");
    const insertEpoch = raw.prepare(
      "INSERT INTO epochs (session_id, number, baseline, snapshot, started_seq, reason, system_prompt) VALUES (?, ?, ?, ?, 1, 'initial', 'null')",
    );
    insertSession.run("good");
    insertEpoch.run("good", 1, "old Baseline", "{}");
    insertEpoch.run("good", 2, "Baseline", JSON.stringify(snapshot));
    insertSession.run("bad");
    insertEpoch.run("bad", 1, "Baseline", "{not json");
    insertSession.run("twice");
    insertEpoch.run("twice", 1, "Baseline", '{"a/b":{"value":1},"a/b":{"value":2}}');
    raw.close();

    const store = new SqliteSessionStore(file);
    try {
      expect(store.schemaVersion).to.equal(migrations.length);
      expect(await store.activeEpoch("good")).to.deep.equal({
        number: 2,
        baseline: "Baseline",
        snapshot,
        startedSeq: 1,
        reason: "initial",
        systemPrompt: null,
      });
      expect((await store.activeEpoch("twice"))?.snapshot, "the last value of a key written twice").to.deep.equal({
        "a/b": { value: 2 },
      });
      let failure: unknown;
      await store.activeEpoch("bad").catch((error: unknown) => {
        failure = error;
      });
      expect(failure).to.be.instanceOf(SessionCorrupt);
      expect((failure as Error).message)
        .to.include("bad")
        .and.to.include("Context Snapshot of epoch 1 is corrupt");
    } finally {
      await store.close();
    }
  });
});

describe("session store: listSessions(store)", () => {
  it("lists what the store's listSessions lists", async () => {
    const store = new SqliteSessionStore(":memory:");
    try {
      await store.createSession({ id: "b", location: "/p", provider: "x", model: "m" });
      await store.createSession({ id: "a", location: "/q", provider: "y", model: "n" });
      expect((await listSessions(store)).map((session) => [session.id, session.location, session.provider])).to.deep.equal([
        ["b", "/p", "x"],
        ["a", "/q", "y"],
      ]);
    } finally {
      await store.close();
    }
  });

  it("a store without the optional listSessions is StoreCannotList naming the store", async () => {
    class OlderStore {}
    const error = await listSessions(new OlderStore() as unknown as SessionStore).catch((caught: unknown) => caught);
    expect(error).to.be.instanceOf(StoreCannotList);
    expect((error as StoreCannotList).store).to.equal("OlderStore");
    expect((error as Error).message).to.equal(
      "OlderStore cannot list its sessions: it does not implement SessionStore.listSessions (optional; both shipped stores have it)",
    );
  });
});
