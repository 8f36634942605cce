// A commit that only records what an engine caller's history was is bookkeeping: a store
// may commit it without waiting for the disk. Everything that admits context (a Baseline, a
// Mid-Conversation System Message, promoted input, a lease) stays a synced commit.

import path from "node:path";
import { expect } from "chai";
import { planBoundary, type SessionHead } from "../../core/session/store/commit-plan.ts";
import { SqliteSessionStore } from "../../core/session/store/sqlite.ts";
import type { BoundaryCommit, EpochRecord } from "../../core/session/store/store.ts";
import { tempFolder } from "./fixtures.ts";

const head: SessionHead = { revision: 3, lastSeq: 2, epoch: 1, snapshotVersion: 0 };
const active: EpochRecord = { number: 1, baseline: "B", snapshot: {}, startedSeq: 1, reason: "initial", systemPrompt: null };
const seen = { count: 4, digest: "d4" };
const unchanged: BoundaryCommit = { promote: [], settlesEpochDue: false, seen };

describe("bookkeeping commits", () => {
  it("an engine boundary that admits nothing is bookkeeping", () => {
    expect(planBoundary("s", head, active, unchanged).writes.bookkeeping).to.equal(true);
  });

  it("an admitted update, a new epoch, promoted input or a Host boundary is not", () => {
    const update: BoundaryCommit = { ...unchanged, systemUpdate: { text: "u", snapshot: {} } };
    const epoch: BoundaryCommit = {
      ...unchanged,
      newEpoch: { baseline: "B2", snapshot: {}, reason: "compaction", systemPrompt: null },
      settlesEpochDue: true,
    };
    const promoted: BoundaryCommit = { promote: [{ id: 1, text: "hi" }], settlesEpochDue: false };
    const host: BoundaryCommit = { promote: [], settlesEpochDue: false, lease: { holder: "h", expiresAt: 1 } };
    for (const commit of [update, epoch, promoted, host]) {
      expect(planBoundary("s", head, active, commit).writes.bookkeeping).to.equal(undefined);
    }
  });

  it("SQLite keeps a bookkeeping commit, and what it records survives reopening the store", async () => {
    const folder = tempFolder("bookkeeping");
    const file = path.join(folder.path, "sessions.db");
    try {
      const store = new SqliteSessionStore(file);
      await store.createSession({ id: "e", location: "/", provider: "p", model: "m" });
      const first = await store.commitBoundary("e", 0, {
        newEpoch: { baseline: "B", snapshot: {}, reason: "initial", systemPrompt: null },
        promote: [],
        settlesEpochDue: true,
        seen: { count: 2, digest: "d2" },
      });
      await store.commitBoundary("e", first.revision, unchanged);
      // A synced commit after it: the store's own setting was restored.
      const { revision } = await store.session("e");
      await store.commitBoundary("e", revision, { ...unchanged, systemUpdate: { text: "u", snapshot: {} } });
      await store.close();
      const reopened = new SqliteSessionStore(file);
      const session = await reopened.session("e");
      expect(session.seen).to.deep.equal(seen);
      expect(session.revision).to.equal(revision + 1);
      await reopened.close();
    } finally {
      folder.remove();
    }
  });
});
