// Conformance suite for the `SessionStore` interface (core/session/store/store.ts): one
// `it` per contract rule, using only the public interface, so any store can be run
// against it. The SQLite store (core/session/store/sqlite.ts) is the reference.
//
// How a store author runs it: add a test file (`*.test.ts` under test/) that calls
// `describeSessionStoreConformance` with a name and an `open` function. `open` runs
// before every rule and returns:
//   - `store`: a store over fresh, empty data;
//   - `reopen`: opens another store over the same durable data. The suite closes `store`
//     before calling it and closes what it returns. A store that keeps nothing (in memory)
//     leaves it out and passes `{ isDurable: false }` as the third argument: it then has no
//     durability rule;
//   - `close`: runs after every rule; releases the data and closes any store still open
//     (closing a store twice is fine: that is part of the contract).
//
//   import { describeSessionStoreConformance } from "./session-store.ts";
//
//   describeSessionStoreConformance("MyStore", async () => {
//     const data = await freshData();
//     const store = new MyStore(data);
//     return { store, reopen: async () => new MyStore(data), close: async () => { await store.close(); await data.drop(); } };
//   });
//
// Run it with `npm run test:unit`, or alone:
//   npx mocha --no-config --require tsx --extension ts --exit --timeout 20000 test/<your-file>.test.ts
//
// A store must throw the `RevisionConflict` and `SessionNotFound` classes of
// core/session/store/store.ts, exported from the package entry (the runtime tells them
// apart with `instanceof`).

import { expect } from "chai";
import type { ToolCall } from "../../core/session/provider.ts";
import {
  type BoundaryCommit,
  type EpochRecord,
  type PendingPrompt,
  RevisionConflict,
  SessionNotFound,
  type SessionStore,
  type StoredMessage,
} from "../../core/session/store/store.ts";
import type { Snapshot } from "../../core/system-context/index.ts";

/** What `open` returns: a store over fresh data, how to reopen that data, and how to release it. */
export interface SessionStoreFixture {
  readonly store: SessionStore;
  readonly reopen?: () => Promise<SessionStore>;
  close(): Promise<void>;
}

const locationA = "/projects/a";
const locationB = "/projects/b";

const snapshotOne: Snapshot = {
  "test/alpha": {
    value: { n: 1, list: ["x", null, true, 2.5], nested: { deep: [{ k: "v" }] } },
    removed: "alpha no longer applies",
  },
  "test/beta": { value: "b" },
};
const snapshotTwo: Snapshot = {
  "test/alpha": { value: { n: 2, list: [], nested: { deep: [] } }, removed: "alpha no longer applies" },
  "test/gamma/sub": { value: [1, "two", { three: 3 }] },
};
const snapshotThree: Snapshot = { "test/delta": { value: null, removed: "delta no longer applies" } };

const toolCalls: readonly ToolCall[] = [
  { id: "call-1", name: "read", input: { path: "src/main.ts", lines: [1, 20], follow: false } },
  { id: "call-2", name: "list", input: {} },
];

/** A record without its `undefined` fields, so a store may leave them out or set them to `undefined`. */
function plain<T extends object>(record: T): Partial<T> {
  return Object.fromEntries(Object.entries(record).filter(([, value]) => value !== undefined)) as Partial<T>;
}

/** The error a call rejects (or throws) with; fails if it succeeds. */
async function rejection(run: () => Promise<unknown>): Promise<unknown> {
  try {
    await run();
  } catch (error) {
    return error;
  }
  expect.fail("expected the call to fail, but it succeeded");
}

async function expectRevisionConflict(run: () => Promise<unknown>, id: string, expected?: number): Promise<void> {
  const error = await rejection(run);
  expect(error, String(error)).to.be.an.instanceOf(RevisionConflict);
  expect((error as RevisionConflict).sessionId).to.equal(id);
  if (expected !== undefined) expect((error as RevisionConflict).expected).to.equal(expected);
}

/** Everything the store reports about one session. */
async function stateOf(store: SessionStore, id: string, locations: readonly string[] = [locationA, locationB]) {
  const discovered: Record<string, string[]> = {};
  for (const location of locations) discovered[location] = await store.discoveredInstructions(id, location);
  const epoch = await store.activeEpoch(id);
  return {
    session: plain(await store.session(id)),
    messages: (await store.messages(id)).map((message) => plain(message)),
    pending: (await store.pendingPrompts(id)).map((prompt) => plain(prompt)),
    epoch: epoch === undefined ? undefined : plain(epoch),
    discovered,
  };
}

async function create(store: SessionStore, id: string, location = locationA): Promise<void> {
  await store.createSession({ id, location, provider: "provider-a", model: "model-1" });
}

async function revisionOf(store: SessionStore, id: string): Promise<number> {
  return (await store.session(id)).revision;
}

/** Adds prompts and returns them as pending, in order. */
async function addPrompts(store: SessionStore, id: string, ...texts: string[]): Promise<PendingPrompt[]> {
  for (const text of texts) await store.addPrompt(id, text);
  return store.pendingPrompts(id);
}

/** Commits a boundary at the session's current revision. */
async function boundary(store: SessionStore, id: string, commit: BoundaryCommit): Promise<void> {
  await store.commitBoundary(id, await revisionOf(store, id), commit);
}

/** A first boundary: the initial epoch with `snapshotOne`, promoting what is pending. */
async function startFirstEpoch(store: SessionStore, id: string, systemPrompt: string | null = "host prompt"): Promise<void> {
  await boundary(store, id, {
    newEpoch: { baseline: `baseline of ${id}`, snapshot: snapshotOne, reason: "initial", systemPrompt },
    promote: await store.pendingPrompts(id),
    settlesEpochDue: true,
  });
}

async function reply(store: SessionStore, id: string, text: string, calls?: readonly ToolCall[]): Promise<void> {
  const results = (calls ?? []).map((call) => ({ callId: call.id, name: call.name, result: `result of ${call.id}` }));
  await store.commitReply(
    id,
    await revisionOf(store, id),
    { text, ...(calls === undefined ? {} : { toolCalls: calls }) },
    results,
  );
}

function summary(messages: readonly StoredMessage[]): Array<[number, string, string, number]> {
  return messages.map((message) => [message.seq, message.role, message.text, message.epoch]);
}

function expectEpoch(
  epoch: EpochRecord | undefined,
  expected: Omit<EpochRecord, "systemPrompt"> & { systemPrompt: string | null },
) {
  expect(epoch, "an active epoch").to.not.equal(undefined);
  expect(plain(epoch as EpochRecord)).to.deep.equal(expected);
}

/**
 * Registers the conformance suite for a `SessionStore`: `open` gives each rule a store
 * over fresh data (see the top of this file).
 */
export function describeSessionStoreConformance(
  name: string,
  open: () => Promise<SessionStoreFixture>,
  options: { readonly isDurable?: boolean } = {},
): void {
  const isDurable = options.isDurable ?? true;
  describe(`session store conformance: ${name}`, () => {
    let fixture: SessionStoreFixture | undefined;
    let store: SessionStore;

    beforeEach(async () => {
      fixture = await open();
      store = fixture.store;
    });

    afterEach(async () => {
      await fixture?.close();
      fixture = undefined;
    });

    it("a created session reads back with its id, location, provider and model, an integer revision, no epoch due and no reply awaited", async () => {
      await store.createSession({ id: "s1", location: locationA, provider: "provider-a", model: "model-1" });
      await store.createSession({ id: "s2", location: locationB, provider: "provider-b", model: "model-2" });
      const first = await store.session("s1");
      expect(Number.isInteger(first.revision), `revision ${first.revision}`).to.equal(true);
      expect(plain(first)).to.deep.equal({
        id: "s1",
        location: locationA,
        provider: "provider-a",
        model: "model-1",
        revision: first.revision,
        isAwaitingReply: false,
      });
      const second = await store.session("s2");
      expect(plain(second)).to.deep.equal({
        id: "s2",
        location: locationB,
        provider: "provider-b",
        model: "model-2",
        revision: second.revision,
        isAwaitingReply: false,
      });
    });

    it("a new session has no messages, no pending prompts, no active epoch and no discovered instructions", async () => {
      await create(store, "s1");
      expect(await store.messages("s1")).to.deep.equal([]);
      expect(await store.pendingPrompts("s1")).to.deep.equal([]);
      expect(await store.activeEpoch("s1")).to.equal(undefined);
      expect(await store.discoveredInstructions("s1", locationA)).to.deep.equal([]);
    });

    it("creating a session with an id that is taken fails and leaves the existing session as it was", async () => {
      await create(store, "s1");
      await store.addPrompt("s1", "hello");
      const before = await stateOf(store, "s1");
      await rejection(() => store.createSession({ id: "s1", location: locationB, provider: "provider-b", model: "model-2" }));
      expect(await stateOf(store, "s1")).to.deep.equal(before);
    });

    it("session and every write to a session throw SessionNotFound naming an id the store does not know, and create nothing", async () => {
      await create(store, "s1");
      const calls: Record<string, (id: string) => Promise<unknown>> = {
        session: (id) => store.session(id),
        messages: (id) => store.messages(id),
        updateSession: (id) => store.updateSession(id, { model: "model-2", epochDue: "switch" }),
        addPrompt: (id) => store.addPrompt(id, "hello"),
        commitBoundary: (id) =>
          store.commitBoundary(id, 0, {
            newEpoch: { baseline: "b", snapshot: snapshotOne, reason: "initial", systemPrompt: null },
            promote: [],
            settlesEpochDue: true,
          }),
        commitReply: (id) => store.commitReply(id, 0, { text: "hi" }, []),
        commitSummary: (id) => store.commitSummary(id, 0, "summary"),
        addDiscoveredInstructions: (id) => store.addDiscoveredInstructions(id, locationA, ["/projects/a/AGENTS.md"]),
      };
      for (const [method, call] of Object.entries(calls)) {
        const error = await rejection(() => call("nobody"));
        expect(error, `${method}: ${String(error)}`).to.be.an.instanceOf(SessionNotFound);
        expect((error as SessionNotFound).sessionId, method).to.equal("nobody");
      }
      expect(await rejection(() => store.session("nobody")), "no session was created on the way").to.be.an.instanceOf(
        SessionNotFound,
      );
    });

    it("updateSession changes only the fields given, sets epochDue, keeps a due epoch when not given one, and advances the revision", async () => {
      await create(store, "s1");
      await create(store, "s2");
      const other = await stateOf(store, "s2");
      const r0 = await revisionOf(store, "s1");

      await store.updateSession("s1", { model: "model-2" });
      const r1 = await store.session("s1");
      expect(plain(r1)).to.deep.equal({
        id: "s1",
        location: locationA,
        provider: "provider-a",
        model: "model-2",
        revision: r1.revision,
        isAwaitingReply: false,
      });
      expect(r1.revision).to.be.greaterThan(r0);

      await store.updateSession("s1", { location: locationB, epochDue: "move" });
      const r2 = await store.session("s1");
      expect(plain(r2)).to.deep.include({ location: locationB, provider: "provider-a", model: "model-2", epochDue: "move" });
      expect(r2.revision).to.be.greaterThan(r1.revision);

      await store.updateSession("s1", { provider: "provider-b" });
      const r3 = await store.session("s1");
      expect(plain(r3)).to.deep.include({ location: locationB, provider: "provider-b", model: "model-2", epochDue: "move" });
      expect(r3.revision).to.be.greaterThan(r2.revision);

      await store.updateSession("s1", { provider: "provider-c", model: "model-3", epochDue: "switch" });
      const r4 = await store.session("s1");
      expect(plain(r4)).to.deep.include({ location: locationB, provider: "provider-c", model: "model-3", epochDue: "switch" });
      expect(r4.revision).to.be.greaterThan(r3.revision);
      expect(r4.isAwaitingReply).to.equal(false);

      expect(await stateOf(store, "s2"), "another session is untouched").to.deep.equal(other);
    });

    it("updateSession makes earlier revisions stale and keeps an awaited reply awaited: a boundary or reply planned before it conflicts, one at the new revision commits", async () => {
      await create(store, "s1");
      await store.addPrompt("s1", "hello");
      const planned = await revisionOf(store, "s1");
      await store.updateSession("s1", { location: locationB, epochDue: "move" });
      const before = await stateOf(store, "s1");
      await expectRevisionConflict(
        () =>
          store.commitBoundary("s1", planned, {
            newEpoch: { baseline: "b", snapshot: snapshotOne, reason: "initial", systemPrompt: null },
            promote: before.pending as PendingPrompt[],
            settlesEpochDue: true,
          }),
        "s1",
        planned,
      );
      expect(await stateOf(store, "s1")).to.deep.equal(before);

      await startFirstEpoch(store, "s1");
      const awaited = await store.session("s1");
      expect(awaited.isAwaitingReply).to.equal(true);
      await store.updateSession("s1", { model: "model-2", epochDue: "switch" });
      const moved = await store.session("s1");
      expect(moved.isAwaitingReply, "a transition in flight keeps the reply awaited").to.equal(true);
      expect(moved.revision).to.be.greaterThan(awaited.revision);

      await expectRevisionConflict(() => store.commitReply("s1", awaited.revision, { text: "late" }, []), "s1", awaited.revision);
      await store.commitReply("s1", moved.revision, { text: "on time" }, []);
      expect(summary(await store.messages("s1"))).to.deep.equal([
        [1, "user", "hello", 1],
        [2, "assistant", "on time", 1],
      ]);
    });

    it("pending prompts are listed in the order they were added, with distinct ids, per session", async () => {
      await create(store, "s1");
      await create(store, "s2");
      await store.addPrompt("s1", "one");
      await store.addPrompt("s2", "other");
      await store.addPrompt("s1", "two");
      await store.addPrompt("s1", "three");
      await store.addPrompt("s1", "one");
      const pending = await store.pendingPrompts("s1");
      expect(pending.map((prompt) => prompt.text)).to.deep.equal(["one", "two", "three", "one"]);
      expect(new Set(pending.map((prompt) => prompt.id)).size, "distinct ids, even for the same text").to.equal(4);
      expect((await store.pendingPrompts("s2")).map((prompt) => prompt.text)).to.deep.equal(["other"]);
      expect(await store.messages("s1"), "adding a prompt sends nothing into history").to.deep.equal([]);
    });

    it("a boundary with a new epoch numbers it one past the last, starts it at the next seq, and keeps its baseline, snapshot, reason and system prompt", async () => {
      await create(store, "s1");
      await store.addPrompt("s1", "hello");
      await boundary(store, "s1", {
        newEpoch: { baseline: "first baseline", snapshot: snapshotOne, reason: "initial", systemPrompt: "host prompt" },
        promote: await store.pendingPrompts("s1"),
        settlesEpochDue: true,
      });
      expectEpoch(await store.activeEpoch("s1"), {
        number: 1,
        baseline: "first baseline",
        snapshot: snapshotOne,
        startedSeq: 1,
        reason: "initial",
        systemPrompt: "host prompt",
      });

      await reply(store, "s1", "hi", toolCalls);
      await store.addPrompt("s1", "switched");
      await boundary(store, "s1", {
        newEpoch: { baseline: "second baseline", snapshot: snapshotTwo, reason: "switch", systemPrompt: null },
        promote: await store.pendingPrompts("s1"),
        settlesEpochDue: true,
      });
      expectEpoch(await store.activeEpoch("s1"), {
        number: 2,
        baseline: "second baseline",
        snapshot: snapshotTwo,
        startedSeq: 5,
        reason: "switch",
        systemPrompt: null,
      });
      expect(summary(await store.messages("s1")).at(-1)).to.deep.equal([5, "user", "switched", 2]);
    });

    it("a boundary promotes the given prompts in order into history, after its new epoch begins, and leaves prompts it did not promote pending", async () => {
      await create(store, "s1");
      const planned = await addPrompts(store, "s1", "one", "two");
      await store.addPrompt("s1", "arrived later");
      await store.commitBoundary("s1", await revisionOf(store, "s1"), {
        newEpoch: { baseline: "b", snapshot: snapshotOne, reason: "initial", systemPrompt: null },
        promote: planned,
        settlesEpochDue: true,
      });
      expect((await store.messages("s1")).map((message) => plain(message))).to.deep.equal([
        { seq: 1, role: "user", text: "one", epoch: 1 },
        { seq: 2, role: "user", text: "two", epoch: 1 },
      ]);
      expect((await store.pendingPrompts("s1")).map((prompt) => prompt.text)).to.deep.equal(["arrived later"]);

      await reply(store, "s1", "ok");
      await boundary(store, "s1", { promote: await store.pendingPrompts("s1"), settlesEpochDue: false });
      expect(summary(await store.messages("s1")).at(-1), "no new epoch: the current one").to.deep.equal([
        4,
        "user",
        "arrived later",
        1,
      ]);
      expect(await store.pendingPrompts("s1")).to.deep.equal([]);
    });

    it("a boundary's system update is stored after its promoted prompts and advances the active epoch's snapshot, and only that", async () => {
      await create(store, "s1");
      await store.addPrompt("s1", "one");
      await startFirstEpoch(store, "s1");
      await reply(store, "s1", "ok");
      await store.addPrompt("s1", "two");
      await boundary(store, "s1", {
        promote: await store.pendingPrompts("s1"),
        systemUpdate: { text: "alpha is now 2", snapshot: snapshotTwo },
        settlesEpochDue: false,
      });
      expect(summary(await store.messages("s1")).slice(2)).to.deep.equal([
        [3, "user", "two", 1],
        [4, "system-update", "alpha is now 2", 1],
      ]);
      expectEpoch(await store.activeEpoch("s1"), {
        number: 1,
        baseline: "baseline of s1",
        snapshot: snapshotTwo,
        startedSeq: 1,
        reason: "initial",
        systemPrompt: "host prompt",
      });

      // With a new epoch too: the update follows the epoch's prompts and advances the new epoch's snapshot.
      await reply(store, "s1", "ok");
      await store.addPrompt("s1", "three");
      await boundary(store, "s1", {
        newEpoch: { baseline: "moved baseline", snapshot: snapshotTwo, reason: "move", systemPrompt: "host prompt" },
        promote: await store.pendingPrompts("s1"),
        systemUpdate: { text: "delta appeared", snapshot: snapshotThree },
        settlesEpochDue: true,
      });
      expect(summary(await store.messages("s1")).slice(5)).to.deep.equal([
        [6, "user", "three", 2],
        [7, "system-update", "delta appeared", 2],
      ]);
      expectEpoch(await store.activeEpoch("s1"), {
        number: 2,
        baseline: "moved baseline",
        snapshot: snapshotThree,
        startedSeq: 6,
        reason: "move",
        systemPrompt: "host prompt",
      });
    });

    it("a committed boundary sets isAwaitingReply and advances the revision, even when it promotes nothing", async () => {
      await create(store, "s1");
      await startFirstEpoch(store, "s1");
      const first = await store.session("s1");
      expect(first.isAwaitingReply).to.equal(true);
      await reply(store, "s1", "ok", toolCalls);
      const replied = await store.session("s1");
      expect(replied.isAwaitingReply).to.equal(false);
      // After tool results the runtime commits a boundary with nothing to promote.
      await store.commitBoundary("s1", replied.revision, { promote: [], settlesEpochDue: false });
      const second = await store.session("s1");
      expect(second.isAwaitingReply).to.equal(true);
      expect(second.revision).to.be.greaterThan(replied.revision);
      expect(await store.messages("s1"), "nothing to promote, nothing stored").to.have.length(3);
    });

    it("a boundary clears epochDue when it settles it and keeps it when it does not", async () => {
      await create(store, "s1");
      await store.updateSession("s1", { epochDue: "move" });
      await boundary(store, "s1", {
        newEpoch: { baseline: "b", snapshot: snapshotOne, reason: "initial", systemPrompt: null },
        promote: [],
        settlesEpochDue: false,
      });
      expect((await store.session("s1")).epochDue, "not settled: still due").to.equal("move");
      await reply(store, "s1", "ok");
      await boundary(store, "s1", {
        newEpoch: { baseline: "b2", snapshot: snapshotOne, reason: "move", systemPrompt: null },
        promote: [],
        settlesEpochDue: true,
      });
      expect((await store.session("s1")).epochDue, "settled").to.equal(undefined);
    });

    it("a boundary at a stale revision throws RevisionConflict and writes nothing", async () => {
      await create(store, "s1");
      await store.addPrompt("s1", "one");
      const stale = await revisionOf(store, "s1");
      await startFirstEpoch(store, "s1");
      await reply(store, "s1", "ok");
      await store.updateSession("s1", { epochDue: "switch" });
      await store.addPrompt("s1", "two");
      const before = await stateOf(store, "s1");
      await expectRevisionConflict(
        () =>
          store.commitBoundary("s1", stale, {
            newEpoch: { baseline: "b2", snapshot: snapshotTwo, reason: "switch", systemPrompt: null },
            promote: before.pending as PendingPrompt[],
            systemUpdate: { text: "update", snapshot: snapshotThree },
            settlesEpochDue: true,
          }),
        "s1",
        stale,
      );
      expect(await stateOf(store, "s1")).to.deep.equal(before);
    });

    it("a boundary that promotes a prompt that is not pending in the session (already promoted, listed twice, or another session's) throws RevisionConflict and writes nothing", async () => {
      await create(store, "s1");
      await create(store, "s2");
      const [first] = await addPrompts(store, "s1", "one");
      await startFirstEpoch(store, "s1");
      await reply(store, "s1", "ok");
      await store.updateSession("s1", { epochDue: "switch" });
      const [second] = await addPrompts(store, "s1", "two");
      const [foreign] = await addPrompts(store, "s2", "elsewhere");
      const cases: Record<string, PendingPrompt[]> = {
        "already promoted": [second!, first!],
        "listed twice": [second!, second!],
        "another session's": [second!, foreign!],
      };
      for (const [label, promote] of Object.entries(cases)) {
        const before = await stateOf(store, "s1");
        const otherBefore = await stateOf(store, "s2");
        await expectRevisionConflict(
          () =>
            store.commitBoundary("s1", before.session.revision as number, {
              newEpoch: { baseline: "b2", snapshot: snapshotTwo, reason: "switch", systemPrompt: null },
              promote,
              systemUpdate: { text: "update", snapshot: snapshotThree },
              settlesEpochDue: true,
            }),
          "s1",
        );
        expect(await stateOf(store, "s1"), label).to.deep.equal(before);
        expect(await stateOf(store, "s2"), label).to.deep.equal(otherBefore);
      }
    });

    it("a reply at the current revision stores the assistant message with its tool calls, then its tool results in order, clears isAwaitingReply and advances the revision", async () => {
      await create(store, "s1");
      await store.addPrompt("s1", "read things");
      await startFirstEpoch(store, "s1");
      const awaited = await store.session("s1");
      await store.commitReply("s1", awaited.revision, { text: "reading", toolCalls }, [
        { callId: "call-1", name: "read", result: "file text" },
        { callId: "call-2", name: "list", result: "a\nb" },
      ]);
      expect((await store.messages("s1")).map((message) => plain(message))).to.deep.equal([
        { seq: 1, role: "user", text: "read things", epoch: 1 },
        { seq: 2, role: "assistant", text: "reading", epoch: 1, toolCalls },
        { seq: 3, role: "tool", text: "file text", epoch: 1, callId: "call-1", name: "read" },
        { seq: 4, role: "tool", text: "a\nb", epoch: 1, callId: "call-2", name: "list" },
      ]);
      const replied = await store.session("s1");
      expect(replied.isAwaitingReply).to.equal(false);
      expect(replied.revision).to.be.greaterThan(awaited.revision);
    });

    it("a reply's token usage and provider content are stored with its assistant message and read back exactly", async () => {
      await create(store, "s1");
      await store.addPrompt("s1", "one");
      await startFirstEpoch(store, "s1");
      const usage = { input: 1200, cacheRead: 800, cacheWrite: 300, cacheWrite1h: 100, output: 42 };
      const providerContent = {
        provider: "anthropic",
        model: "claude-opus-4-8",
        blocks: [
          { type: "thinking", thinking: "Let me look.", signature: "c2lnbmF0dXJl" },
          { type: "redacted_thinking", data: "AbC==" },
        ],
      };
      await store.commitReply("s1", await revisionOf(store, "s1"), { text: "done", toolCalls, usage, providerContent }, [
        { callId: "c1", name: "read", result: "r1" },
        { callId: "c2", name: "list", result: "r2" },
      ]);
      const messages = await store.messages("s1");
      const assistant = messages.find((m) => m.role === "assistant") as StoredMessage;
      expect(assistant.usage).to.deep.equal(usage);
      expect(assistant.providerContent).to.deep.equal(providerContent);
      expect(messages.filter((m) => m.role === "tool").map((m) => m.usage)).to.deep.equal([undefined, undefined]);
      await reply(store, "s1", "no usage");
      const plain = (await store.messages("s1")).at(-1) as StoredMessage;
      expect(plain).to.not.have.property("usage");
      expect(plain).to.not.have.property("providerContent");
    });

    it("a reply without tool calls, or with an empty list of them, stores an assistant message with no toolCalls", async () => {
      await create(store, "s1");
      await startFirstEpoch(store, "s1");
      await store.commitReply("s1", await revisionOf(store, "s1"), { text: "none" }, []);
      await boundary(store, "s1", { promote: [], settlesEpochDue: false });
      await store.commitReply("s1", await revisionOf(store, "s1"), { text: "empty", toolCalls: [] }, []);
      expect((await store.messages("s1")).map((message) => plain(message))).to.deep.equal([
        { seq: 1, role: "assistant", text: "none", epoch: 1 },
        { seq: 2, role: "assistant", text: "empty", epoch: 1 },
      ]);
    });

    it("a reply at a stale revision throws RevisionConflict and writes nothing", async () => {
      await create(store, "s1");
      await store.addPrompt("s1", "one");
      await startFirstEpoch(store, "s1");
      const stale = await revisionOf(store, "s1");
      await reply(store, "s1", "first");
      await store.addPrompt("s1", "two");
      await boundary(store, "s1", { promote: await store.pendingPrompts("s1"), settlesEpochDue: false });
      const before = await stateOf(store, "s1");
      await expectRevisionConflict(
        () =>
          store.commitReply("s1", stale, { text: "duplicate", toolCalls }, [
            { callId: "call-1", name: "read", result: "r1" },
            { callId: "call-2", name: "list", result: "r2" },
          ]),
        "s1",
        stale,
      );
      expect(await stateOf(store, "s1")).to.deep.equal(before);
      expect((await store.session("s1")).isAwaitingReply, "still awaited").to.equal(true);
    });

    it("a summary at the current revision is appended in the current epoch, sets epochDue to compaction and advances the revision", async () => {
      await create(store, "s1");
      await store.addPrompt("s1", "one");
      await startFirstEpoch(store, "s1");
      await reply(store, "s1", "ok");
      const before = await store.session("s1");
      await store.commitSummary("s1", before.revision, "what happened so far");
      expect(summary(await store.messages("s1")).at(-1)).to.deep.equal([3, "summary", "what happened so far", 1]);
      const after = await store.session("s1");
      expect(after.epochDue).to.equal("compaction");
      expect(after.isAwaitingReply).to.equal(false);
      expect(after.revision).to.be.greaterThan(before.revision);

      // The next boundary starts the compaction epoch after the summary.
      await boundary(store, "s1", {
        newEpoch: { baseline: "compacted", snapshot: snapshotTwo, reason: "compaction", systemPrompt: null },
        promote: [],
        settlesEpochDue: true,
      });
      expect(await store.activeEpoch("s1")).to.deep.include({ number: 2, startedSeq: 4, reason: "compaction" });
      expect((await store.session("s1")).epochDue).to.equal(undefined);
    });

    it("a summary at a stale revision throws RevisionConflict and writes nothing", async () => {
      await create(store, "s1");
      await startFirstEpoch(store, "s1");
      const stale = await revisionOf(store, "s1");
      await reply(store, "s1", "ok");
      const before = await stateOf(store, "s1");
      await expectRevisionConflict(() => store.commitSummary("s1", stale, "late summary"), "s1", stale);
      expect(await stateOf(store, "s1")).to.deep.equal(before);
    });

    it("messages are oldest first, numbered 1 to N per session without gaps, each tagged with the epoch in effect when it was stored", async () => {
      await create(store, "s1");
      await create(store, "s2");
      await store.addPrompt("s1", "one");
      await store.addPrompt("s2", "elsewhere");
      await startFirstEpoch(store, "s1");
      await startFirstEpoch(store, "s2");
      await reply(store, "s1", "calling", [toolCalls[0]!]);
      await reply(store, "s2", "hello there");
      await boundary(store, "s1", {
        promote: [],
        systemUpdate: { text: "beta changed", snapshot: snapshotTwo },
        settlesEpochDue: false,
      });
      await reply(store, "s1", "done");
      await store.commitSummary("s1", await revisionOf(store, "s1"), "summary");
      await store.addPrompt("s1", "after compaction");
      await boundary(store, "s1", {
        newEpoch: { baseline: "b2", snapshot: snapshotThree, reason: "compaction", systemPrompt: null },
        promote: await store.pendingPrompts("s1"),
        settlesEpochDue: true,
      });
      await reply(store, "s1", "fresh");
      expect(summary(await store.messages("s1"))).to.deep.equal([
        [1, "user", "one", 1],
        [2, "assistant", "calling", 1],
        [3, "tool", "result of call-1", 1],
        [4, "system-update", "beta changed", 1],
        [5, "assistant", "done", 1],
        [6, "summary", "summary", 1],
        [7, "user", "after compaction", 2],
        [8, "assistant", "fresh", 2],
      ]);
      expect(summary(await store.messages("s2"))).to.deep.equal([
        [1, "user", "elsewhere", 1],
        [2, "assistant", "hello there", 1],
      ]);
    });

    it("activeEpoch is undefined before the first boundary, then the latest epoch with the snapshot and system prompt as committed", async () => {
      await create(store, "s1");
      expect(await store.activeEpoch("s1")).to.equal(undefined);
      await startFirstEpoch(store, "s1", "the host prompt\nwith two lines");
      const first = await store.activeEpoch("s1");
      expect(first?.snapshot).to.deep.equal(snapshotOne);
      expect(first?.systemPrompt).to.equal("the host prompt\nwith two lines");
      await reply(store, "s1", "ok");
      await boundary(store, "s1", {
        newEpoch: { baseline: "second", snapshot: snapshotTwo, reason: "replacement", systemPrompt: null },
        promote: [],
        settlesEpochDue: true,
      });
      const second = await store.activeEpoch("s1");
      expect(second?.number).to.equal(2);
      expect(second?.snapshot).to.deep.equal(snapshotTwo);
      expect(second?.systemPrompt, "null (no system prompt) is kept as null").to.equal(null);
      await reply(store, "s1", "ok");
      await boundary(store, "s1", {
        newEpoch: { baseline: "third", snapshot: {}, reason: "switch", systemPrompt: "" },
        promote: [],
        settlesEpochDue: true,
      });
      expectEpoch(await store.activeEpoch("s1"), {
        number: 3,
        baseline: "third",
        snapshot: {},
        startedSeq: 3,
        reason: "switch",
        systemPrompt: "",
      });
    });

    it("discovered instructions are kept per session and location, in discovery order, and files already known there are ignored", async () => {
      await create(store, "s1");
      await create(store, "s2");
      // Discovery order, not name order: across calls and within one call.
      await store.addDiscoveredInstructions("s1", locationA, ["/projects/a/z/AGENTS.md"]);
      await store.addDiscoveredInstructions("s1", locationA, ["/projects/a/m/AGENTS.md", "/projects/a/AGENTS.md"]);
      await store.addDiscoveredInstructions("s1", locationA, ["/projects/a/z/AGENTS.md", "/projects/a/b/AGENTS.md"]);
      await store.addDiscoveredInstructions("s1", locationA, ["/projects/a/AGENTS.md"]);
      await store.addDiscoveredInstructions("s1", locationB, ["/projects/a/AGENTS.md"]);
      await store.addDiscoveredInstructions("s2", locationA, ["/projects/a/y/AGENTS.md"]);
      await store.addDiscoveredInstructions("s1", locationA, []);
      expect(await store.discoveredInstructions("s1", locationA)).to.deep.equal([
        "/projects/a/z/AGENTS.md",
        "/projects/a/m/AGENTS.md",
        "/projects/a/AGENTS.md",
        "/projects/a/b/AGENTS.md",
      ]);
      expect(await store.discoveredInstructions("s1", locationB), "known in another location: new here").to.deep.equal([
        "/projects/a/AGENTS.md",
      ]);
      expect(await store.discoveredInstructions("s2", locationA)).to.deep.equal(["/projects/a/y/AGENTS.md"]);
      expect(await store.discoveredInstructions("s2", locationB)).to.deep.equal([]);
    });

    // A store that keeps nothing (declared with `isDurable: false`) has no such rule.
    if (!isDurable) return;
    it("everything committed survives closing the store and opening its data again", async () => {
      const reopen = fixture?.reopen;
      if (reopen === undefined) {
        throw new Error("a durable store's fixture must give `reopen`");
      }
      await create(store, "s1");
      await create(store, "s2", locationB);
      await store.addPrompt("s1", "one");
      await startFirstEpoch(store, "s1");
      await store.commitReply("s1", await revisionOf(store, "s1"), { text: "reading", toolCalls }, [
        { callId: "call-1", name: "read", result: "file text" },
        { callId: "call-2", name: "list", result: "a\nb" },
      ]);
      await boundary(store, "s1", {
        promote: [],
        systemUpdate: { text: "alpha is now 2", snapshot: snapshotTwo },
        settlesEpochDue: false,
      });
      await reply(store, "s1", "done");
      await store.commitSummary("s1", await revisionOf(store, "s1"), "summary");
      await store.addPrompt("s1", "two");
      await boundary(store, "s1", {
        newEpoch: { baseline: "compacted", snapshot: snapshotThree, reason: "compaction", systemPrompt: null },
        promote: await store.pendingPrompts("s1"),
        settlesEpochDue: true,
      });
      await store.updateSession("s1", { model: "model-2", epochDue: "switch" });
      await store.addPrompt("s1", "still pending");
      await store.addPrompt("s2", "pending elsewhere");
      await store.addDiscoveredInstructions("s1", locationA, ["/projects/a/z/AGENTS.md"]);
      await store.addDiscoveredInstructions("s1", locationA, ["/projects/a/AGENTS.md"]);
      await store.addDiscoveredInstructions("s1", locationB, ["/projects/b/AGENTS.md"]);
      const before = { s1: await stateOf(store, "s1"), s2: await stateOf(store, "s2") };
      expect(before.s1.session.isAwaitingReply, "the setup ends awaiting a reply").to.equal(true);

      await store.close();
      const reopened = await reopen();
      try {
        expect({ s1: await stateOf(reopened, "s1"), s2: await stateOf(reopened, "s2") }).to.deep.equal(before);
        // The revision guard and pending prompt ids carry over.
        const revision = before.s1.session.revision as number;
        await expectRevisionConflict(() => reopened.commitReply("s1", revision - 1, { text: "stale" }, []), "s1");
        await reopened.commitReply("s1", revision, { text: "after reopen" }, []);
        await reopened.commitBoundary("s1", await revisionOf(reopened, "s1"), {
          promote: before.s1.pending as PendingPrompt[],
          settlesEpochDue: false,
        });
        expect(summary(await reopened.messages("s1")).slice(-2)).to.deep.equal([
          [9, "assistant", "after reopen", 2],
          [10, "user", "still pending", 2],
        ]);
        expect(await reopened.pendingPrompts("s1")).to.deep.equal([]);
      } finally {
        await reopened.close();
      }
    });

    it("a boundary's in-flight lease is stored with it and read back; the reply clears it", async () => {
      await create(store, "s1");
      await store.addPrompt("s1", "one");
      const lease = { holder: "host-1", expiresAt: 1_700_000_030_000 };
      await boundary(store, "s1", {
        newEpoch: { baseline: "b", snapshot: snapshotOne, reason: "initial", systemPrompt: null },
        promote: await store.pendingPrompts("s1"),
        settlesEpochDue: true,
        lease,
      });
      expect((await store.session("s1")).lease).to.deep.equal(lease);
      await reply(store, "s1", "ok");
      const after = await store.session("s1");
      expect(after.lease, "no lease once the reply is stored").to.equal(undefined);
      expect(after.isAwaitingReply).to.equal(false);
    });

    it("claimLease succeeds only while a reply is awaited and the lease is free, expired or the claimer's own, and releaseLease frees only its holder's", async () => {
      await create(store, "s1");
      const now = 1_700_000_000_000;
      expect(await store.claimLease("s1", { holder: "a", expiresAt: now + 1000 }, now), "no reply awaited").to.equal(false);
      await store.addPrompt("s1", "one");
      await startFirstEpoch(store, "s1");
      expect(await store.claimLease("s1", { holder: "a", expiresAt: now + 1000 }, now), "free").to.equal(true);
      expect(await store.claimLease("s1", { holder: "b", expiresAt: now + 2000 }, now + 999), "held by a").to.equal(false);
      expect(await store.claimLease("s1", { holder: "a", expiresAt: now + 5000 }, now + 999), "a renews").to.equal(true);
      expect((await store.session("s1")).lease).to.deep.equal({ holder: "a", expiresAt: now + 5000 });
      await store.releaseLease("s1", "b");
      expect((await store.session("s1")).lease, "b cannot release a's lease").to.deep.equal({
        holder: "a",
        expiresAt: now + 5000,
      });
      expect(await store.claimLease("s1", { holder: "b", expiresAt: now + 9000 }, now + 5000), "expired").to.equal(true);
      await store.releaseLease("s1", "b");
      expect((await store.session("s1")).lease, "released").to.equal(undefined);
      expect(await store.claimLease("s1", { holder: "c", expiresAt: now + 9000 }, now), "free again").to.equal(true);
      const error = await rejection(() => store.claimLease("nobody", { holder: "a", expiresAt: now }, now));
      expect(error).to.be.an.instanceOf(SessionNotFound);
    });

    it("close can be called more than once", async () => {
      await create(store, "s1");
      await store.close();
      await store.close();
    });
  });
}
