// Owns `describeStoreConformance`: the `SessionStore` contract (core/session/store/store.ts)
// as test cases, one per rule, using only the public interface, so any store can be run
// against it. The SQLite store (core/session/store/sqlite.ts) is the reference; the
// PostgreSQL store runs it too. Assertions are `node:assert/strict`, so the package needs
// no test library at run time; the rules are declared through a runner (mocha's globals by
// default), and each rule opens its own fixture and closes it, so the runner needs only
// `describe` and `it`. docs/conformance.md ("Store conformance") shows a store author's use.
//
// A store must throw the `RevisionConflict` and `SessionNotFound` classes of
// `context-host/store` (the runtime tells them apart with `instanceof`).

import assert from "node:assert/strict";
import type { ToolCall } from "../session/provider.ts";
import {
  type BoundaryCommit,
  type EpochRecord,
  type PendingPrompt,
  RevisionConflict,
  SessionNotFound,
  type SessionStore,
  type StoredMessage,
} from "../session/store/store.ts";
import type { Snapshot } from "../system-context/index.ts";
import { ConformanceSetupInvalid } from "./errors.ts";
import type { TestRunner } from "./plugin-suite.ts";

/**
 * What `open` returns, once per rule: a store over fresh, empty data; how to open
 * another store over the same durable data (`reopen`: the suite closes `store` before
 * calling it and closes what it returns; a store that keeps nothing leaves it out and is
 * declared with `isDurable: false`); and `close`, run after the rule, which releases the
 * data and closes any store still open (closing a store twice is part of the contract).
 */
export interface SessionStoreFixture {
  readonly store: SessionStore;
  readonly reopen?: () => Promise<SessionStore>;
  close(): Promise<void>;
}

/** Options of `describeStoreConformance`. */
export interface StoreConformanceOptions {
  /** Whether the store keeps its data across closing and reopening (default true): only then the durability rule runs. */
  readonly isDurable?: boolean;
  /** The test functions to declare the rules with; mocha's globals when left out. */
  readonly runner?: Pick<TestRunner, "describe" | "it">;
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
  assert.fail("expected the call to fail, but it succeeded");
}

/** Fails unless `actual` is a number above `floor` (a revision that advanced). */
function above(actual: number, floor: number, message?: string): void {
  assert.ok(typeof actual === "number" && actual > floor, message ?? `expected ${actual} to be above ${floor}`);
}

/** Fails unless `actual` is an object with every property of `expected`, each deeply (strictly) equal. */
function includes(actual: object | undefined, expected: Record<string, unknown>, message?: string): void {
  assert.ok(typeof actual === "object" && actual !== null, message ?? `expected an object, got ${String(actual)}`);
  const record = actual as Record<string, unknown>;
  const found = Object.fromEntries(
    Object.keys(expected)
      .filter((key) => key in record)
      .map((key) => [key, record[key]]),
  );
  assert.deepEqual(found, expected, message);
}

async function expectRevisionConflict(run: () => Promise<unknown>, id: string, expected?: number): Promise<void> {
  const error = await rejection(run);
  assert.ok(error instanceof RevisionConflict, String(error));
  assert.equal((error as RevisionConflict).sessionId, id);
  if (expected !== undefined) assert.equal((error as RevisionConflict).expected, expected);
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
  assert.notEqual(epoch, undefined, "an active epoch");
  assert.deepEqual(plain(epoch as EpochRecord), expected);
}

function globalRunner(): Pick<TestRunner, "describe" | "it"> {
  const g = globalThis as unknown as Partial<TestRunner>;
  if (typeof g.describe !== "function" || typeof g.it !== "function") {
    throw new ConformanceSetupInvalid({
      suite: "describeStoreConformance",
      reason: "no describe/it globals; run it under mocha or pass `runner` in the options",
    });
  }
  return g as TestRunner;
}

/**
 * Declares the `SessionStore` conformance suite: one test case per contract rule, titled
 * by the rule, each on a store over fresh data from `open` (called at the start of the
 * case; the fixture's `close` runs at its end, pass or fail). A store passes when every
 * case passes. Declares through mocha's `describe`/`it` globals unless `options.runner`
 * gives others.
 *
 * @example
 * ```ts
 * import { describeStoreConformance } from "context-host/conformance";
 *
 * describeStoreConformance("MyStore", async () => {
 *   const data = await freshData();
 *   const store = new MyStore(data);
 *   return { store, reopen: async () => new MyStore(data), close: async () => { await store.close(); await data.drop(); } };
 * });
 * ```
 */
export function describeStoreConformance(
  name: string,
  open: () => Promise<SessionStoreFixture>,
  options: StoreConformanceOptions = {},
): void {
  const isDurable = options.isDurable ?? true;
  const runner = options.runner ?? globalRunner();
  /** One rule: a case that opens a fixture, runs `body` on it and closes it; the rule's own failure wins over close's. */
  const rule = (title: string, body: (store: SessionStore, fixture: SessionStoreFixture) => Promise<void>) =>
    runner.it(title, async () => {
      const fixture = await open();
      try {
        await body(fixture.store, fixture);
      } catch (error) {
        await fixture.close().catch(() => undefined);
        throw error;
      }
      await fixture.close();
    });
  runner.describe(`session store conformance: ${name}`, () => {
    rule(
      "a created session reads back with its id, location, provider and model, an integer revision, no epoch due and no reply awaited",
      async (store) => {
        await store.createSession({ id: "s1", location: locationA, provider: "provider-a", model: "model-1" });
        await store.createSession({ id: "s2", location: locationB, provider: "provider-b", model: "model-2" });
        const first = await store.session("s1");
        assert.equal(Number.isInteger(first.revision), true, `revision ${first.revision}`);
        assert.deepEqual(plain(first), {
          id: "s1",
          location: locationA,
          provider: "provider-a",
          model: "model-1",
          revision: first.revision,
          isAwaitingReply: false,
        });
        const second = await store.session("s2");
        assert.deepEqual(plain(second), {
          id: "s2",
          location: locationB,
          provider: "provider-b",
          model: "model-2",
          revision: second.revision,
          isAwaitingReply: false,
        });
      },
    );

    rule(
      "listSessions (optional) lists every session oldest first, each as session(id) reads it, whatever changed since; none on fresh data",
      async (store) => {
        const list = store.listSessions?.bind(store);
        if (list === undefined) return;
        assert.deepEqual(await list(), [], "fresh data holds no sessions");
        const ids = ["m-third", "a-first", "z-second"];
        for (const id of ids) await create(store, id);
        // Changing the oldest session (its location, a boundary, a reply) does not move it.
        await store.updateSession("m-third", { location: locationB, model: "model-2" });
        await addPrompts(store, "m-third", "hello");
        await startFirstEpoch(store, "m-third");
        await reply(store, "m-third", "hi");
        const listed = await list();
        assert.deepEqual(
          listed.map((session) => session.id),
          ids,
        );
        for (const session of listed) assert.deepEqual(plain(session), plain(await store.session(session.id)), session.id);
        includes(listed[0], { location: locationB, provider: "provider-a", model: "model-2" });
      },
    );

    rule(
      "readBoundary (optional) reads what session, activeEpoch, pendingPrompts and messages(afterSeq) read; SessionNotFound for an unknown id",
      async (store) => {
        const read = store.readBoundary?.bind(store);
        if (read === undefined) return;
        const expectSame = async (id: string, afterSeq: number, when: string) => {
          const { session, epoch, pending, appended } = await read(id, afterSeq);
          // As JSON: a property set to undefined and one left out are the same.
          const json = (value: object) => JSON.parse(JSON.stringify(value));
          assert.deepEqual(
            json({ session, epoch, pending, appended }),
            json({
              session: await store.session(id),
              epoch: await store.activeEpoch(id),
              pending: await store.pendingPrompts(id),
              appended: await store.messages(id, afterSeq),
            }),
            when,
          );
        };
        await create(store, "s1");
        await create(store, "s2", locationB);
        await expectSame("s1", 0, "a new session");
        await addPrompts(store, "s1", "one", "two", "three");
        await store.addPrompt("s2", "another session's");
        await expectSame("s1", 0, "three pending");
        await startFirstEpoch(store, "s1");
        await expectSame("s1", 0, "first boundary");
        await expectSame("s1", 2, "after seq 2");
        await reply(store, "s1", "answer");
        await addPrompts(store, "s1", "four");
        await boundary(store, "s1", {
          promote: await store.pendingPrompts("s1"),
          systemUpdate: { text: "b is now 2", snapshot: snapshotTwo },
          settlesEpochDue: false,
        });
        await expectSame("s1", 4, "reply awaited");
        await store.updateSession("s1", { model: "model-2", epochDue: "switch" });
        await expectSame("s1", 6, "epoch due");
        const error = await rejection(() => read("nobody", 0));
        assert.ok(error instanceof SessionNotFound, String(error));
        assert.equal((error as SessionNotFound).sessionId, "nobody");
      },
    );

    rule("a new session has no messages, no pending prompts, no active epoch and no discovered instructions", async (store) => {
      await create(store, "s1");
      assert.deepEqual(await store.messages("s1"), []);
      assert.deepEqual(await store.pendingPrompts("s1"), []);
      assert.equal(await store.activeEpoch("s1"), undefined);
      assert.deepEqual(await store.discoveredInstructions("s1", locationA), []);
    });

    rule("creating a session with an id that is taken fails and leaves the existing session as it was", async (store) => {
      await create(store, "s1");
      await store.addPrompt("s1", "hello");
      const before = await stateOf(store, "s1");
      await rejection(() => store.createSession({ id: "s1", location: locationB, provider: "provider-b", model: "model-2" }));
      assert.deepEqual(await stateOf(store, "s1"), before);
    });

    rule(
      "session and every write to a session throw SessionNotFound naming an id the store does not know, and create nothing",
      async (store) => {
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
          assert.ok(error instanceof SessionNotFound, `${method}: ${String(error)}`);
          assert.equal((error as SessionNotFound).sessionId, "nobody", method);
        }
        assert.ok(
          (await rejection(() => store.session("nobody"))) instanceof SessionNotFound,
          "no session was created on the way",
        );
      },
    );

    rule(
      "updateSession changes only the fields given, sets epochDue, keeps a due epoch when not given one, and advances the revision",
      async (store) => {
        await create(store, "s1");
        await create(store, "s2");
        const other = await stateOf(store, "s2");
        const r0 = await revisionOf(store, "s1");

        await store.updateSession("s1", { model: "model-2" });
        const r1 = await store.session("s1");
        assert.deepEqual(plain(r1), {
          id: "s1",
          location: locationA,
          provider: "provider-a",
          model: "model-2",
          revision: r1.revision,
          isAwaitingReply: false,
        });
        above(r1.revision, r0);

        await store.updateSession("s1", { location: locationB, epochDue: "move" });
        const r2 = await store.session("s1");
        includes(plain(r2), { location: locationB, provider: "provider-a", model: "model-2", epochDue: "move" });
        above(r2.revision, r1.revision);

        await store.updateSession("s1", { provider: "provider-b" });
        const r3 = await store.session("s1");
        includes(plain(r3), { location: locationB, provider: "provider-b", model: "model-2", epochDue: "move" });
        above(r3.revision, r2.revision);

        await store.updateSession("s1", { provider: "provider-c", model: "model-3", epochDue: "switch" });
        const r4 = await store.session("s1");
        includes(plain(r4), { location: locationB, provider: "provider-c", model: "model-3", epochDue: "switch" });
        above(r4.revision, r3.revision);
        assert.equal(r4.isAwaitingReply, false);

        assert.deepEqual(await stateOf(store, "s2"), other, "another session is untouched");
      },
    );

    rule(
      "updateSession makes earlier revisions stale and keeps an awaited reply awaited: a boundary or reply planned before it conflicts, one at the new revision commits",
      async (store) => {
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
        assert.deepEqual(await stateOf(store, "s1"), before);

        await startFirstEpoch(store, "s1");
        const awaited = await store.session("s1");
        assert.equal(awaited.isAwaitingReply, true);
        await store.updateSession("s1", { model: "model-2", epochDue: "switch" });
        const moved = await store.session("s1");
        assert.equal(moved.isAwaitingReply, true, "a transition in flight keeps the reply awaited");
        above(moved.revision, awaited.revision);

        await expectRevisionConflict(
          () => store.commitReply("s1", awaited.revision, { text: "late" }, []),
          "s1",
          awaited.revision,
        );
        await store.commitReply("s1", moved.revision, { text: "on time" }, []);
        assert.deepEqual(summary(await store.messages("s1")), [
          [1, "user", "hello", 1],
          [2, "assistant", "on time", 1],
        ]);
      },
    );

    rule("pending prompts are listed in the order they were added, with distinct ids, per session", async (store) => {
      await create(store, "s1");
      await create(store, "s2");
      await store.addPrompt("s1", "one");
      await store.addPrompt("s2", "other");
      await store.addPrompt("s1", "two");
      await store.addPrompt("s1", "three");
      await store.addPrompt("s1", "one");
      const pending = await store.pendingPrompts("s1");
      assert.deepEqual(
        pending.map((prompt) => prompt.text),
        ["one", "two", "three", "one"],
      );
      assert.equal(new Set(pending.map((prompt) => prompt.id)).size, 4, "distinct ids, even for the same text");
      assert.deepEqual(
        (await store.pendingPrompts("s2")).map((prompt) => prompt.text),
        ["other"],
      );
      assert.deepEqual(await store.messages("s1"), [], "adding a prompt sends nothing into history");
    });

    rule(
      "a boundary with a new epoch numbers it one past the last, starts it at the next seq, and keeps its baseline, snapshot, reason and system prompt",
      async (store) => {
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
        assert.deepEqual(summary(await store.messages("s1")).at(-1), [5, "user", "switched", 2]);
      },
    );

    rule(
      "a boundary promotes the given prompts in order into history, after its new epoch begins, and leaves prompts it did not promote pending",
      async (store) => {
        await create(store, "s1");
        const planned = await addPrompts(store, "s1", "one", "two");
        await store.addPrompt("s1", "arrived later");
        await store.commitBoundary("s1", await revisionOf(store, "s1"), {
          newEpoch: { baseline: "b", snapshot: snapshotOne, reason: "initial", systemPrompt: null },
          promote: planned,
          settlesEpochDue: true,
        });
        assert.deepEqual(
          (await store.messages("s1")).map((message) => plain(message)),
          [
            { seq: 1, role: "user", text: "one", epoch: 1 },
            { seq: 2, role: "user", text: "two", epoch: 1 },
          ],
        );
        assert.deepEqual(
          (await store.pendingPrompts("s1")).map((prompt) => prompt.text),
          ["arrived later"],
        );

        await reply(store, "s1", "ok");
        await boundary(store, "s1", { promote: await store.pendingPrompts("s1"), settlesEpochDue: false });
        assert.deepEqual(
          summary(await store.messages("s1")).at(-1),
          [4, "user", "arrived later", 1],
          "no new epoch: the current one",
        );
        assert.deepEqual(await store.pendingPrompts("s1"), []);
      },
    );

    rule(
      "a boundary's system update is stored after its promoted prompts and advances the active epoch's snapshot, and only that",
      async (store) => {
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
        assert.deepEqual(summary(await store.messages("s1")).slice(2), [
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
        assert.deepEqual(summary(await store.messages("s1")).slice(5), [
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
      },
    );

    rule("messages after a sequence number are only those after it, oldest first; after the last, none", async (store) => {
      await create(store, "s1");
      await store.addPrompt("s1", "one");
      await startFirstEpoch(store, "s1");
      await reply(store, "s1", "ok");
      await store.addPrompt("s1", "two");
      await boundary(store, "s1", { promote: await store.pendingPrompts("s1"), settlesEpochDue: false });
      const all = await store.messages("s1");
      assert.ok(all.length >= 3, `expected at least 3 messages, have ${all.length}`);
      for (const [index, message] of all.entries()) {
        assert.deepEqual(
          summary(await store.messages("s1", message.seq)),
          summary(all.slice(index + 1)),
          `messages after seq ${message.seq}`,
        );
      }
      assert.deepEqual(summary(await store.messages("s1", 0)), summary(all));
    });

    rule("a committed boundary sets isAwaitingReply and advances the revision, even when it promotes nothing", async (store) => {
      await create(store, "s1");
      await startFirstEpoch(store, "s1");
      const first = await store.session("s1");
      assert.equal(first.isAwaitingReply, true);
      await reply(store, "s1", "ok", toolCalls);
      const replied = await store.session("s1");
      assert.equal(replied.isAwaitingReply, false);
      // After tool results the runtime commits a boundary with nothing to promote.
      await store.commitBoundary("s1", replied.revision, { promote: [], settlesEpochDue: false });
      const second = await store.session("s1");
      assert.equal(second.isAwaitingReply, true);
      above(second.revision, replied.revision);
      assert.equal((await store.messages("s1")).length, 3, "nothing to promote, nothing stored");
    });

    rule("a boundary clears epochDue when it settles it and keeps it when it does not", async (store) => {
      await create(store, "s1");
      await store.updateSession("s1", { epochDue: "move" });
      await boundary(store, "s1", {
        newEpoch: { baseline: "b", snapshot: snapshotOne, reason: "initial", systemPrompt: null },
        promote: [],
        settlesEpochDue: false,
      });
      assert.equal((await store.session("s1")).epochDue, "move", "not settled: still due");
      await reply(store, "s1", "ok");
      await boundary(store, "s1", {
        newEpoch: { baseline: "b2", snapshot: snapshotOne, reason: "move", systemPrompt: null },
        promote: [],
        settlesEpochDue: true,
      });
      assert.equal((await store.session("s1")).epochDue, undefined, "settled");
    });

    rule("a boundary at a stale revision throws RevisionConflict and writes nothing", async (store) => {
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
      assert.deepEqual(await stateOf(store, "s1"), before);
    });

    rule(
      "a boundary that promotes a prompt that is not pending in the session (already promoted, listed twice, or another session's) throws RevisionConflict and writes nothing",
      async (store) => {
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
          assert.deepEqual(await stateOf(store, "s1"), before, label);
          assert.deepEqual(await stateOf(store, "s2"), otherBefore, label);
        }
      },
    );

    rule(
      "a reply at the current revision stores the assistant message with its tool calls, then its tool results in order, clears isAwaitingReply and advances the revision",
      async (store) => {
        await create(store, "s1");
        await store.addPrompt("s1", "read things");
        await startFirstEpoch(store, "s1");
        const awaited = await store.session("s1");
        await store.commitReply("s1", awaited.revision, { text: "reading", toolCalls }, [
          { callId: "call-1", name: "read", result: "file text" },
          { callId: "call-2", name: "list", result: "a\nb" },
        ]);
        assert.deepEqual(
          (await store.messages("s1")).map((message) => plain(message)),
          [
            { seq: 1, role: "user", text: "read things", epoch: 1 },
            { seq: 2, role: "assistant", text: "reading", epoch: 1, toolCalls },
            { seq: 3, role: "tool", text: "file text", epoch: 1, callId: "call-1", name: "read" },
            { seq: 4, role: "tool", text: "a\nb", epoch: 1, callId: "call-2", name: "list" },
          ],
        );
        const replied = await store.session("s1");
        assert.equal(replied.isAwaitingReply, false);
        above(replied.revision, awaited.revision);
      },
    );

    rule(
      "a reply's token usage and provider content are stored with its assistant message and read back exactly",
      async (store) => {
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
        assert.deepEqual(assistant.usage, usage);
        assert.deepEqual(assistant.providerContent, providerContent);
        assert.deepEqual(
          messages.filter((m) => m.role === "tool").map((m) => m.usage),
          [undefined, undefined],
        );
        await reply(store, "s1", "no usage");
        const plain = (await store.messages("s1")).at(-1) as StoredMessage;
        assert.ok(!("usage" in plain), "a reply without usage has no usage property");
        assert.ok(!("providerContent" in plain), "a reply without provider content has no providerContent property");
      },
    );

    rule(
      "a reply without tool calls, or with an empty list of them, stores an assistant message with no toolCalls",
      async (store) => {
        await create(store, "s1");
        await startFirstEpoch(store, "s1");
        await store.commitReply("s1", await revisionOf(store, "s1"), { text: "none" }, []);
        await boundary(store, "s1", { promote: [], settlesEpochDue: false });
        await store.commitReply("s1", await revisionOf(store, "s1"), { text: "empty", toolCalls: [] }, []);
        assert.deepEqual(
          (await store.messages("s1")).map((message) => plain(message)),
          [
            { seq: 1, role: "assistant", text: "none", epoch: 1 },
            { seq: 2, role: "assistant", text: "empty", epoch: 1 },
          ],
        );
      },
    );

    rule("a reply at a stale revision throws RevisionConflict and writes nothing", async (store) => {
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
      assert.deepEqual(await stateOf(store, "s1"), before);
      assert.equal((await store.session("s1")).isAwaitingReply, true, "still awaited");
    });

    rule(
      "a summary at the current revision is appended in the current epoch, sets epochDue to compaction and advances the revision",
      async (store) => {
        await create(store, "s1");
        await store.addPrompt("s1", "one");
        await startFirstEpoch(store, "s1");
        await reply(store, "s1", "ok");
        const before = await store.session("s1");
        await store.commitSummary("s1", before.revision, "what happened so far");
        assert.deepEqual(summary(await store.messages("s1")).at(-1), [3, "summary", "what happened so far", 1]);
        const after = await store.session("s1");
        assert.equal(after.epochDue, "compaction");
        assert.equal(after.isAwaitingReply, false);
        above(after.revision, before.revision);

        // The next boundary starts the compaction epoch after the summary.
        await boundary(store, "s1", {
          newEpoch: { baseline: "compacted", snapshot: snapshotTwo, reason: "compaction", systemPrompt: null },
          promote: [],
          settlesEpochDue: true,
        });
        includes(await store.activeEpoch("s1"), { number: 2, startedSeq: 4, reason: "compaction" });
        assert.equal((await store.session("s1")).epochDue, undefined);
      },
    );

    rule("a summary at a stale revision throws RevisionConflict and writes nothing", async (store) => {
      await create(store, "s1");
      await startFirstEpoch(store, "s1");
      const stale = await revisionOf(store, "s1");
      await reply(store, "s1", "ok");
      const before = await stateOf(store, "s1");
      await expectRevisionConflict(() => store.commitSummary("s1", stale, "late summary"), "s1", stale);
      assert.deepEqual(await stateOf(store, "s1"), before);
    });

    rule(
      "messages are oldest first, numbered 1 to N per session without gaps, each tagged with the epoch in effect when it was stored",
      async (store) => {
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
        assert.deepEqual(summary(await store.messages("s1")), [
          [1, "user", "one", 1],
          [2, "assistant", "calling", 1],
          [3, "tool", "result of call-1", 1],
          [4, "system-update", "beta changed", 1],
          [5, "assistant", "done", 1],
          [6, "summary", "summary", 1],
          [7, "user", "after compaction", 2],
          [8, "assistant", "fresh", 2],
        ]);
        assert.deepEqual(summary(await store.messages("s2")), [
          [1, "user", "elsewhere", 1],
          [2, "assistant", "hello there", 1],
        ]);
      },
    );

    rule(
      "activeEpoch is undefined before the first boundary, then the latest epoch with the snapshot and system prompt as committed",
      async (store) => {
        await create(store, "s1");
        assert.equal(await store.activeEpoch("s1"), undefined);
        await startFirstEpoch(store, "s1", "the host prompt\nwith two lines");
        const first = await store.activeEpoch("s1");
        assert.deepEqual(first?.snapshot, snapshotOne);
        assert.equal(first?.systemPrompt, "the host prompt\nwith two lines");
        await reply(store, "s1", "ok");
        await boundary(store, "s1", {
          newEpoch: { baseline: "second", snapshot: snapshotTwo, reason: "replacement", systemPrompt: null },
          promote: [],
          settlesEpochDue: true,
        });
        const second = await store.activeEpoch("s1");
        assert.equal(second?.number, 2);
        assert.deepEqual(second?.snapshot, snapshotTwo);
        assert.equal(second?.systemPrompt, null, "null (no system prompt) is kept as null");
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
      },
    );

    rule(
      "discovered instructions are kept per session and location, in discovery order, and files already known there are ignored",
      async (store) => {
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
        assert.deepEqual(await store.discoveredInstructions("s1", locationA), [
          "/projects/a/z/AGENTS.md",
          "/projects/a/m/AGENTS.md",
          "/projects/a/AGENTS.md",
          "/projects/a/b/AGENTS.md",
        ]);
        assert.deepEqual(
          await store.discoveredInstructions("s1", locationB),
          ["/projects/a/AGENTS.md"],
          "known in another location: new here",
        );
        assert.deepEqual(await store.discoveredInstructions("s2", locationA), ["/projects/a/y/AGENTS.md"]);
        assert.deepEqual(await store.discoveredInstructions("s2", locationB), []);
      },
    );

    // A store that keeps nothing (declared with `isDurable: false`) has no such rule.
    if (isDurable) {
      rule("everything committed survives closing the store and opening its data again", async (store, fixture) => {
        const reopen = fixture.reopen;
        if (reopen === undefined) {
          throw new ConformanceSetupInvalid({
            suite: `describeStoreConformance(${JSON.stringify(name)})`,
            reason: "a durable store's fixture must give `reopen` (or declare the store with `isDurable: false`)",
          });
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
        assert.equal(before.s1.session.isAwaitingReply, true, "the setup ends awaiting a reply");

        await store.close();
        const reopened = await reopen();
        try {
          assert.deepEqual({ s1: await stateOf(reopened, "s1"), s2: await stateOf(reopened, "s2") }, before);
          // The revision guard and pending prompt ids carry over.
          const revision = before.s1.session.revision as number;
          await expectRevisionConflict(() => reopened.commitReply("s1", revision - 1, { text: "stale" }, []), "s1");
          await reopened.commitReply("s1", revision, { text: "after reopen" }, []);
          await reopened.commitBoundary("s1", await revisionOf(reopened, "s1"), {
            promote: before.s1.pending as PendingPrompt[],
            settlesEpochDue: false,
          });
          assert.deepEqual(summary(await reopened.messages("s1")).slice(-2), [
            [9, "assistant", "after reopen", 2],
            [10, "user", "still pending", 2],
          ]);
          assert.deepEqual(await reopened.pendingPrompts("s1"), []);
        } finally {
          await reopened.close();
        }
      });
    }

    rule("a boundary's in-flight lease is stored with it and read back; the reply clears it", async (store) => {
      await create(store, "s1");
      await store.addPrompt("s1", "one");
      const lease = { holder: "host-1", expiresAt: 1_700_000_030_000 };
      await boundary(store, "s1", {
        newEpoch: { baseline: "b", snapshot: snapshotOne, reason: "initial", systemPrompt: null },
        promote: await store.pendingPrompts("s1"),
        settlesEpochDue: true,
        lease,
      });
      assert.deepEqual((await store.session("s1")).lease, lease);
      await reply(store, "s1", "ok");
      const after = await store.session("s1");
      assert.equal(after.lease, undefined, "no lease once the reply is stored");
      assert.equal(after.isAwaitingReply, false);
    });

    rule(
      "claimLease succeeds only while a reply is awaited and the lease is free, expired or the claimer's own, and releaseLease frees only its holder's",
      async (store) => {
        await create(store, "s1");
        const now = 1_700_000_000_000;
        assert.equal(await store.claimLease("s1", { holder: "a", expiresAt: now + 1000 }, now), false, "no reply awaited");
        await store.addPrompt("s1", "one");
        await startFirstEpoch(store, "s1");
        assert.equal(await store.claimLease("s1", { holder: "a", expiresAt: now + 1000 }, now), true, "free");
        assert.equal(await store.claimLease("s1", { holder: "b", expiresAt: now + 2000 }, now + 999), false, "held by a");
        assert.equal(await store.claimLease("s1", { holder: "a", expiresAt: now + 5000 }, now + 999), true, "a renews");
        assert.deepEqual((await store.session("s1")).lease, { holder: "a", expiresAt: now + 5000 });
        await store.releaseLease("s1", "b");
        assert.deepEqual(
          (await store.session("s1")).lease,
          {
            holder: "a",
            expiresAt: now + 5000,
          },
          "b cannot release a's lease",
        );
        assert.equal(await store.claimLease("s1", { holder: "b", expiresAt: now + 9000 }, now + 5000), true, "expired");
        await store.releaseLease("s1", "b");
        assert.equal((await store.session("s1")).lease, undefined, "released");
        assert.equal(await store.claimLease("s1", { holder: "c", expiresAt: now + 9000 }, now), true, "free again");
        const error = await rejection(() => store.claimLease("nobody", { holder: "a", expiresAt: now }, now));
        assert.ok(error instanceof SessionNotFound, String(error));
      },
    );

    rule(
      "an engine boundary (the context engine's session, whose history is the caller's) keeps what it saw of its caller's history, awaits no reply, writes where a new epoch runs, and gives its update the position it saw",
      async (store) => {
        await store.createSession({ id: "e1", location: locationA, provider: "provider-a", model: "model-1" });
        const first = await store.commitBoundary("e1", (await store.session("e1")).revision, {
          newEpoch: {
            baseline: "Baseline one",
            snapshot: snapshotOne,
            reason: "initial",
            systemPrompt: null,
            where: { location: locationA, provider: "provider-a", model: "model-1" },
          },
          promote: [],
          settlesEpochDue: true,
          seen: { count: 1, digest: "d1" },
        });
        const session = await store.session("e1");
        includes(session, { isAwaitingReply: false, revision: first.revision }, "an engine boundary awaits no reply");
        assert.deepEqual(session.seen, { count: 1, digest: "d1" });
        assert.equal(session.lease, undefined);
        const update = await store.commitBoundary("e1", first.revision, {
          promote: [],
          systemUpdate: { text: "alpha is now 2", snapshot: snapshotTwo },
          settlesEpochDue: false,
          seen: { count: 3, digest: "d3" },
        });
        assert.deepEqual(
          update.appended.map((m) => [m.role, m.text, m.position]),
          [["system-update", "alpha is now 2", 3]],
        );
        assert.deepEqual(
          (await store.messages("e1")).map((m) => [m.role, m.position]),
          [["system-update", 3]],
          "the position reads back",
        );
        const switched = await store.commitBoundary("e1", update.revision, {
          newEpoch: {
            baseline: "Baseline two",
            snapshot: snapshotTwo,
            reason: "switch",
            systemPrompt: null,
            where: { location: locationB, provider: "provider-b", model: "model-2" },
          },
          promote: [],
          settlesEpochDue: true,
          seen: { count: 4, digest: "d4" },
        });
        includes(await store.session("e1"), {
          location: locationB,
          provider: "provider-b",
          model: "model-2",
          revision: switched.revision,
          isAwaitingReply: false,
        });
        assert.deepEqual((await store.session("e1")).seen, { count: 4, digest: "d4" });
        includes(await store.activeEpoch("e1"), { number: 2, baseline: "Baseline two", reason: "switch" });
      },
    );

    rule("close can be called more than once", async (store) => {
      await create(store, "s1");
      await store.close();
      await store.close();
    });
  });
}
