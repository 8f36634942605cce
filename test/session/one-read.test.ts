// One observation and one read per boundary (issue 9): an updating step reads the session,
// its active epoch and its pending input once and only the history appended since; a due
// transition that is blocked observes the sources once; the snapshot just written is
// never parsed again.

import Database from "better-sqlite3";
import { expect } from "chai";
import { scriptedProvider } from "../../core/index.ts";
import { SqliteSessionStore, sessionsFile } from "../../core/session/store/sqlite.ts";
import type { SessionStore } from "../../core/session/store/store.ts";
import * as SystemContext from "../../core/system-context.ts";
import { hostsPerTest, requestOf, tempFolder, testSource, transcript } from "./fixtures.ts";

/** A SQLite store that records every read the runtime makes of it. */
class CountingStore extends SqliteSessionStore {
  readonly reads: string[] = [];

  override async session(id: string) {
    this.reads.push("session");
    return super.session(id);
  }
  override async activeEpoch(id: string) {
    this.reads.push("activeEpoch");
    return super.activeEpoch(id);
  }
  override async pendingPrompts(id: string) {
    this.reads.push("pendingPrompts");
    return super.pendingPrompts(id);
  }
  override async messages(id: string, afterSeq?: number) {
    const read = await super.messages(id, afterSeq);
    this.reads.push(`messages after ${afterSeq ?? "none"}: ${read.length}`);
    return read;
  }
  override async readBoundary(id: string, afterSeq: number) {
    const read = await super.readBoundary(id, afterSeq);
    this.reads.push(`readBoundary after ${afterSeq}: ${read.appended.length}`);
    return read;
  }
}

/** The counting store as a store without `readBoundary`: the runtime reads it one call at a time. */
function withoutReadBoundary(store: CountingStore): SessionStore {
  return new Proxy(store, {
    get: (target, name) => {
      if (name === "readBoundary") return undefined;
      const value = Reflect.get(target, name, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

describe("session runtime: one observation and one read per boundary", () => {
  const { folder, startSession } = hostsPerTest();

  for (const kind of ["one read", "one call each"] as const) {
    it(`an updating step reads the session, its epoch and its pending input once, and only the history appended since (${kind})`, async () => {
      const branch = testSource("core/branch", "main");
      const counting = new CountingStore(sessionsFile(folder.path));
      const store = kind === "one read" ? counting : withoutReadBoundary(counting);
      const provider = scriptedProvider();
      const { host, id } = await startSession(provider, { core: [branch.core], store });
      for (const text of ["one", "two", "three"]) {
        await host.prompt(id, text);
        await host.step(id);
      }
      const last = (await host.messages(id)).at(-1)?.seq;

      branch.state.value = "feature";
      await host.prompt(id, "four");
      counting.reads.length = 0;
      const request = requestOf(await host.step(id));

      expect(counting.reads.sort()).to.deep.equal(
        kind === "one read"
          ? [`readBoundary after ${last}: 0`]
          : ["session", "activeEpoch", "pendingPrompts", `messages after ${last}: 0`].sort(),
        "the commit returned what the request needs",
      );
      expect(transcript(request.messages).slice(-2)).to.deep.equal(["user: four", "system-update: core/branch is now feature"]);
    });
  }

  it("a step sees what another runtime appended to the session since its last step", async () => {
    const branch = testSource("core/branch", "main");
    const provider = scriptedProvider();
    const { host, id } = await startSession(provider, { core: [branch.core] });
    await host.prompt(id, "one");
    await host.step(id);

    const other = await startSession(scriptedProvider(), { core: [branch.core] });
    await other.host.prompt(id, "two from the other");
    await other.host.step(id);

    await host.prompt(id, "three");
    const request = requestOf(await host.step(id));
    expect(transcript(request.messages)).to.deep.equal([
      "user: one",
      "assistant: reply 1: one",
      "user: two from the other",
      "assistant: reply 1: two from the other",
      "user: three",
    ]);
  });

  it("a due transition blocked by unavailable admitted context observes every source once", async () => {
    const branch = testSource("core/branch", "main");
    const mode = testSource("core/mode", "build");
    const provider = scriptedProvider();
    const { host, id } = await startSession(provider, { core: [branch.core, mode.core] });
    await host.prompt(id, "one");
    await host.step(id);

    await host.switchModel(id, { model: "m2" });
    branch.state.value = SystemContext.unavailable;
    mode.state.value = "plan";
    await host.prompt(id, "two");
    const before = [branch.state.loads, mode.state.loads];
    const request = requestOf(await host.step(id));

    expect([branch.state.loads - (before[0] as number), mode.state.loads - (before[1] as number)]).to.deep.equal([1, 1]);
    expect(transcript(request.messages).at(-1), "the epoch went on with the change reconciled").to.equal(
      "system-update: core/mode is now plan",
    );
  });
});

describe("session store: SQLite snapshots", () => {
  it("a commit numbers its messages from the session's head as it stands: another store's commits in between are counted and read", async () => {
    const folder = tempFolder("store-tail");
    const a = new SqliteSessionStore(sessionsFile(folder.path));
    const b = new SqliteSessionStore(sessionsFile(folder.path));
    try {
      const snapshot = (value: number) => SystemContext.parseSnapshot({ "test/a": { value } });
      await a.createSession({ id: "s", location: folder.path, provider: "p", model: "m" });
      await a.addPrompt("s", "one");
      const first = await a.readBoundary("s", 0);
      const started = await a.commitBoundary("s", first.session.revision, {
        newEpoch: { baseline: "a is 1", snapshot: snapshot(1), reason: "initial", systemPrompt: null },
        promote: first.pending,
        settlesEpochDue: true,
      });
      // `b` moves the session past what `a` last read and wrote.
      await b.commitReply("s", started.revision, { text: "from b" }, []);
      await b.addPrompt("s", "two");
      const seen = await b.readBoundary("s", 0);
      await b.commitBoundary("s", seen.session.revision, {
        promote: seen.pending,
        systemUpdate: { text: "a is now 2", snapshot: snapshot(2) },
        settlesEpochDue: false,
      });

      const current = (await a.session("s")).revision;
      const replied = await a.commitReply("s", current, { text: "from a" }, []);
      expect(replied.appended.map((message) => [message.seq, message.epoch])).to.deep.equal([[5, 1]]);
      const read = await a.readBoundary("s", 1);
      expect(read.epoch?.snapshot).to.deep.equal(snapshot(2));
      expect(read.appended.map((message) => `${message.seq} ${message.role}: ${message.text}`)).to.deep.equal([
        "2 assistant: from b",
        "3 user: two",
        "4 system-update: a is now 2",
        "5 assistant: from a",
      ]);
    } finally {
      await a.close();
      await b.close();
      folder.remove();
    }
  });

  it("the Context Snapshot a boundary just wrote is returned and read back as written, not parsed again", async () => {
    const folder = tempFolder("store-snapshot");
    const store = new SqliteSessionStore(sessionsFile(folder.path));
    try {
      await store.createSession({ id: "s", location: folder.path, provider: "p", model: "m" });
      await store.addPrompt("s", "hello");
      const [prompt] = await store.pendingPrompts("s");
      const first = SystemContext.parseSnapshot({ "test/a": { value: 1 } });
      const initial = await store.commitBoundary("s", 0, {
        newEpoch: { baseline: "a is 1", snapshot: first, reason: "initial", systemPrompt: null },
        promote: prompt === undefined ? [] : [prompt],
        settlesEpochDue: true,
      });
      expect(initial.epoch.snapshot).to.equal(first);
      expect(initial.appended.map((m) => [m.seq, m.role, m.text])).to.deep.equal([[1, "user", "hello"]]);
      await store.commitReply("s", initial.revision, { text: "hi" }, []);

      const next = SystemContext.parseSnapshot({ "test/a": { value: 2 } });
      const committed = await store.commitBoundary("s", initial.revision + 1, {
        promote: [],
        systemUpdate: { text: "a is now 2", snapshot: next },
        settlesEpochDue: false,
      });
      expect(committed.epoch.snapshot).to.equal(next);
      expect((await store.activeEpoch("s"))?.snapshot).to.equal(next);
      expect(committed.appended.map((m) => [m.seq, m.role])).to.deep.equal([[3, "system-update"]]);
    } finally {
      await store.close();
      folder.remove();
    }
  });

  it("a Mid-Conversation change writes only the entries it changed, and a change written by another store is read", async () => {
    const folder = tempFolder("store-entries");
    const file = sessionsFile(folder.path);
    const store = new SqliteSessionStore(file);
    const other = new SqliteSessionStore(file);
    const raw = new Database(file);
    try {
      // Every write to an entry row, as SQLite sees it.
      raw.exec(`CREATE TABLE entry_writes (key TEXT);
        CREATE TRIGGER entry_inserted AFTER INSERT ON snapshot_entries BEGIN INSERT INTO entry_writes VALUES (NEW.key); END;
        CREATE TRIGGER entry_updated AFTER UPDATE ON snapshot_entries BEGIN INSERT INTO entry_writes VALUES (NEW.key); END;
        CREATE TRIGGER entry_deleted AFTER DELETE ON snapshot_entries BEGIN INSERT INTO entry_writes VALUES (OLD.key); END;`);
      const writes = () =>
        (raw.prepare("DELETE FROM entry_writes RETURNING key").all() as Array<{ key: string }>).map((r) => r.key).sort();
      const keys = Array.from({ length: 50 }, (_, i) => `test/k${String(i).padStart(2, "0")}`);
      const first = SystemContext.parseSnapshot(Object.fromEntries(keys.map((key) => [key, { value: 0 }])));
      await store.createSession({ id: "s", location: folder.path, provider: "p", model: "m" });
      let revision = (
        await store.commitBoundary("s", 0, {
          newEpoch: { baseline: "all 0", snapshot: first, reason: "initial", systemPrompt: null },
          promote: [],
          settlesEpochDue: true,
        })
      ).revision;
      expect(writes(), "a new epoch writes every entry").to.deep.equal(keys);
      revision += 1;
      await store.commitReply("s", revision - 1, { text: "ok" }, []);

      // Unchanged entries carried as the same objects, one changed, one gone.
      const { "test/k49": _gone, ...kept } = first;
      const next = SystemContext.parseSnapshot({ ...kept, "test/k07": { value: 1 } });
      const carried = Object.fromEntries(Object.keys(next).map((key) => [key, key === "test/k07" ? next[key] : first[key]]));
      const committed = await store.commitBoundary("s", revision, {
        promote: [],
        systemUpdate: { text: "k07 is now 1; k49 is gone", snapshot: carried as typeof next },
        settlesEpochDue: false,
      });
      expect(writes(), "only the changed and the removed entry").to.deep.equal(["test/k07", "test/k49"]);
      expect(await other.activeEpoch("s"), "what another store reads back").to.deep.equal(committed.epoch);

      // Another store (another process on the same file) advances the snapshot: this one reads it.
      await other.commitReply("s", committed.revision, { text: "ok" }, []);
      const theirs = SystemContext.parseSnapshot({ ...next, "test/k08": { value: 5 } });
      await other.commitBoundary("s", committed.revision + 1, {
        promote: [],
        systemUpdate: { text: "k08 is now 5", snapshot: theirs },
        settlesEpochDue: false,
      });
      expect((await store.activeEpoch("s"))?.snapshot).to.deep.equal(theirs);
    } finally {
      raw.close();
      await other.close();
      await store.close();
      folder.remove();
    }
  });
});
