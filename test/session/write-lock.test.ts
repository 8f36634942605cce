// Another process holding the SQLite file's write lock (issue 32): a write waits for it in
// timers, so the host's other sessions are served meanwhile; the write goes through once
// the lock is released, or fails with `StoreBusy` after the bound (decision 175).

import { once } from "node:events";
import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";
import { expect } from "chai";
import { scriptedProvider } from "../../core/index.ts";
import { type SessionStore, SqliteSessionStore, StoreBusy } from "../../core/store.ts";
import { hostsPerTest, sleep, transcript } from "./fixtures.ts";

const require = createRequire(import.meta.url);

/**
 * Another connection to `file`, in a worker thread (as another process would be), holding
 * the write lock (`BEGIN IMMEDIATE`) until `release`.
 */
async function holdWriteLock(file: string): Promise<{ release(): Promise<void> }> {
  const worker = new Worker(
    `const { parentPort, workerData } = require("node:worker_threads");
     const Database = require(workerData.driver);
     const db = new Database(workerData.file);
     db.exec("BEGIN IMMEDIATE");
     parentPort.postMessage("held");
     parentPort.once("message", () => {
       db.exec("ROLLBACK");
       db.close();
       parentPort.postMessage("released");
     });`,
    { eval: true, workerData: { file, driver: require.resolve("better-sqlite3") } },
  );
  const [first] = await once(worker, "message");
  expect(first).to.equal("held");
  let released: Promise<void> | undefined;
  return {
    release() {
      released ??= (async () => {
        worker.postMessage("release");
        await once(worker, "message");
        await worker.terminate();
      })();
      return released;
    },
  };
}

/** The store with each boundary commit's start recorded in `events`. */
function recordingCommits(store: SqliteSessionStore, events: string[]): SessionStore {
  return new Proxy(store, {
    get(target, name) {
      const value = Reflect.get(target, name, target);
      if (typeof value !== "function") return value;
      if (name === "commitBoundary") {
        return (...args: Parameters<SessionStore["commitBoundary"]>) => {
          events.push("commit began");
          return target.commitBoundary(...args);
        };
      }
      return value.bind(target);
    },
  });
}

describe("session store: another process's write lock", () => {
  const { folder, start } = hostsPerTest();

  /** A host on the data folder's SQLite file with two sessions, `other` already answered once. */
  async function twoSessions(events: string[]) {
    const store = new SqliteSessionStore(`${folder.path}/sessions.db`);
    const host = await start({ providers: { scripted: scriptedProvider() }, store: recordingCommits(store, events) });
    const session = { location: folder.path, provider: "scripted", model: "m" };
    const id = await host.createSession(session);
    const other = await host.createSession(session);
    await host.prompt(other, "hello");
    await host.step(other);
    await host.prompt(id, "one");
    events.length = 0;
    return { host, id, other, file: store.file };
  }

  it("a step waiting for the lock lets timers tick and other sessions be read, and commits once the lock is released", async () => {
    const events: string[] = [];
    const { host, id, other, file } = await twoSessions(events);
    const lock = await holdWriteLock(file);
    try {
      const stepping = host.step(id).then((result) => {
        events.push(`step ${result.kind}`);
      });
      while (!events.includes("commit began")) await sleep(1);
      for (let tick = 0; tick < 5; tick++) {
        await sleep(5);
        events.push("tick");
      }
      events.push(`other session read: ${transcript(await host.messages(other)).join(", ")}`);
      await lock.release();
      await stepping;
      expect(events).to.deep.equal([
        "commit began",
        "tick",
        "tick",
        "tick",
        "tick",
        "tick",
        "other session read: user: hello, assistant: reply 1: hello",
        "step replied",
      ]);
      expect(transcript(await host.messages(id))).to.deep.equal(["user: one", "assistant: reply 2: one"]);
    } finally {
      await lock.release();
    }
  });

  it("a lock held past the bound fails the write with StoreBusy naming the file, after serving others meanwhile; the session steps once it is released", async () => {
    const events: string[] = [];
    const { host, id, other, file } = await twoSessions(events);
    const lock = await holdWriteLock(file);
    try {
      let ticks = 0;
      const ticker = setInterval(() => ticks++, 10);
      const failing = host.step(id).then(
        () => undefined,
        (error: unknown) => {
          events.push(`step failed after ${ticks >= 5 ? "5 or more" : ticks} ticks`);
          return error;
        },
      );
      while (!events.includes("commit began")) await sleep(1);
      events.push(`other session read: ${(await host.messages(other)).length} messages`);
      const error = await failing;
      clearInterval(ticker);
      expect(events).to.deep.equal(["commit began", "other session read: 2 messages", "step failed after 5 or more ticks"]);
      expect(error).to.be.an.instanceOf(StoreBusy);
      expect(error).to.include({ file, waitedMs: 1000 });
      expect((error as Error).message).to.include(`commit a boundary of session ${id}`);
    } finally {
      await lock.release();
    }
    expect((await host.step(id)).kind).to.equal("replied");
    expect(transcript(await host.messages(id))).to.deep.equal(["user: one", "assistant: reply 2: one"]);
  });
});
