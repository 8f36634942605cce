// One observation and one read per boundary (issue 9): an updating step reads the session,
// its active epoch and its pending input once and only the history appended since; a due
// transition that is blocked observes the sources once; the snapshot just written is
// never parsed again.

import { expect } from "chai";
import { scriptedProvider } from "../../core/index.ts";
import { SqliteSessionStore, sessionsFile } from "../../core/session/store/sqlite.ts";
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
}

describe("session runtime: one observation and one read per boundary", () => {
  const { folder, startSession } = hostsPerTest();

  it("an updating step reads the session, its epoch and its pending input once, and only the history appended since", async () => {
    const branch = testSource("core/branch", "main");
    const store = new CountingStore(sessionsFile(folder.path));
    const provider = scriptedProvider();
    const { host, id } = await startSession(provider, { core: [branch.core], store });
    for (const text of ["one", "two", "three"]) {
      await host.prompt(id, text);
      await host.step(id);
    }
    const last = (await host.messages(id)).at(-1)?.seq;

    branch.state.value = "feature";
    await host.prompt(id, "four");
    store.reads.length = 0;
    const request = requestOf(await host.step(id));

    expect(store.reads.sort()).to.deep.equal(
      ["session", "activeEpoch", "pendingPrompts", `messages after ${last}: 0`].sort(),
      "the commit returned what the request needs",
    );
    expect(transcript(request.messages).slice(-2)).to.deep.equal(["user: four", "system-update: core/branch is now feature"]);
  });

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
});
