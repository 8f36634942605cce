// The boundary loop that the Host's session runtime and the context engine share: a round
// reads, the caller decides, the loop commits; another writer committing first means a
// fresh read and a new decision, a bounded number of times; a session that does not exist
// yet is created once, and a history with a gap is read again whole.

import path from "node:path";
import { expect } from "chai";
import { maxReplans, readSession, runBoundary, type SessionState } from "../../core/session/boundary-loop.ts";
import { BoundaryContended } from "../../core/session/errors.ts";
import { SessionHistories } from "../../core/session/history.ts";
import { SqliteSessionStore } from "../../core/session/store/sqlite.ts";
import type { BoundaryCommit, SessionStore } from "../../core/session/store/store.ts";
import { tempFolder } from "./fixtures.ts";

const where = { location: "/", provider: "scripted", model: "m" };

/** A first Baseline's commit. */
function firstBaseline(text: string): BoundaryCommit {
  return {
    newEpoch: { baseline: text, snapshot: {}, reason: "initial", systemPrompt: null },
    promote: [],
    settlesEpochDue: true,
  };
}

/** `store`, except that `commitBoundary` runs `before` first (another writer acting in between). */
function withWriterBefore(store: SessionStore, before: () => Promise<void>): SessionStore {
  return new Proxy(store, {
    get(target, key) {
      if (key === "commitBoundary") {
        return async (...args: Parameters<SessionStore["commitBoundary"]>) => {
          await before();
          return target.commitBoundary(...args);
        };
      }
      const value = Reflect.get(target, key, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

describe("the boundary loop", () => {
  let folder: ReturnType<typeof tempFolder>;
  let store: SqliteSessionStore;
  beforeEach(() => {
    folder = tempFolder("boundary-loop");
    store = new SqliteSessionStore(path.join(folder.path, "sessions.db"));
  });
  afterEach(async () => {
    await store.close();
    folder.remove();
  });

  it("creates a new session before its first commit, and commits what the caller decided", async () => {
    const seen: Array<SessionState | undefined> = [];
    const baseline = await runBoundary({
      store,
      histories: new SessionHistories(),
      sessionId: "s1",
      newSession: where,
      plan: async (state) => {
        seen.push(state);
        return {
          kind: "commit",
          commit: firstBaseline("B1"),
          committed: (committed) => committed.epoch.baseline,
        };
      },
    });
    expect(seen).to.deep.equal([undefined]);
    expect(baseline).to.equal("B1");
    expect((await store.activeEpoch("s1"))?.baseline).to.equal("B1");
  });

  it("decides again on a fresh read when another writer committed first", async () => {
    await store.createSession({ id: "s2", ...where });
    let otherWrote = false;
    const racing = withWriterBefore(store, async () => {
      if (otherWrote) return;
      otherWrote = true;
      await store.commitBoundary("s2", 0, firstBaseline("theirs"));
    });
    const revisions: number[] = [];
    const epochs: Array<string | undefined> = [];
    const answer = await runBoundary({
      store: racing,
      histories: new SessionHistories(),
      sessionId: "s2",
      plan: async ({ session, epoch }) => {
        revisions.push(session.revision);
        epochs.push(epoch?.baseline);
        if (epoch !== undefined) return { kind: "answer", value: `kept ${epoch.baseline}` };
        return { kind: "commit", commit: firstBaseline("mine"), committed: () => "committed mine" };
      },
    });
    expect(answer).to.equal("kept theirs");
    expect(epochs).to.deep.equal([undefined, "theirs"]);
    expect(revisions[1]).to.be.greaterThan(revisions[0] as number);
  });

  it("gives up with BoundaryContended after the bounded number of rounds, having decided each time", async () => {
    await store.createSession({ id: "s3", ...where });
    let revision = 0;
    const alwaysFirst = withWriterBefore(store, async () => {
      // Another writer settles the session's due transition every time, so every commit conflicts.
      await store.updateSession("s3", { model: `m${revision++}` });
    });
    let rounds = 0;
    const running = runBoundary({
      store: alwaysFirst,
      histories: new SessionHistories(),
      sessionId: "s3",
      plan: async () => {
        rounds++;
        return { kind: "commit", commit: firstBaseline("never"), committed: () => "never" };
      },
    });
    const error = await running.then(
      () => undefined,
      (failure: unknown) => failure,
    );
    expect(error).to.be.instanceOf(BoundaryContended);
    expect((error as BoundaryContended).rounds).to.equal(maxReplans);
    expect(rounds).to.equal(maxReplans);
    expect(await store.activeEpoch("s3")).to.equal(undefined);
  });

  it("reads again when the caller says what it read no longer holds", async () => {
    await store.createSession({ id: "s4", ...where });
    let rounds = 0;
    const answer = await runBoundary({
      store,
      histories: new SessionHistories(),
      sessionId: "s4",
      plan: async () => {
        rounds++;
        return rounds < 3 ? { kind: "replan" } : { kind: "answer", value: rounds };
      },
    });
    expect(answer).to.equal(3);
  });

  it("catches a history with a gap up by reading it whole", async () => {
    await store.createSession({ id: "s5", ...where });
    for (const text of ["one", "two", "three"]) await store.addPrompt("s5", text);
    // Promote the first prompt and read it; then another writer promotes the others unseen.
    await store.commitBoundary("s5", 0, {
      ...firstBaseline("B"),
      promote: (await store.pendingPrompts("s5")).slice(0, 1),
    });
    const histories = new SessionHistories();
    const { history } = await readSession(store, histories, "s5");
    expect(history.all.map((message) => message.text)).to.deep.equal(["one"]);
    const { revision } = await store.session("s5");
    const { appended } = await store.commitBoundary("s5", revision, {
      promote: await store.pendingPrompts("s5"),
      settlesEpochDue: false,
    });
    expect(appended.map((message) => message.text)).to.deep.equal(["two", "three"]);
    // Told only of the last message, after one it never read: a gap, so it reads the whole history.
    await history.catchUp(appended.slice(1), store);
    expect(history.all.map((message) => message.text)).to.deep.equal(["one", "two", "three"]);
  });
});
