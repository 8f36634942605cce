// What reconciling knew about the snapshot it made (`reconciledChange`): the entries it
// wrote and the keys it removed, for exactly the snapshot it was reconciled from; and the
// store's `snapshotChange`, which writes only those, agrees with comparing every entry.

import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { expect } from "chai";
import { snapshotChange } from "../../core/session/store/epoch-rows.ts";
import { reconciledChange } from "../../core/system-context/change.ts";
import type { Snapshot } from "../../core/system-context/index.ts";
import * as SystemContext from "../../core/system-context.ts";
import { numberSource } from "./sources.ts";

/** Reconciles and returns the updated snapshot (fails the test on any other outcome). */
async function updated(context: SystemContext.SystemContext, snapshot: Snapshot): Promise<Snapshot> {
  const result = await SystemContext.reconcile(context, snapshot);
  if (result.kind !== "updated") throw new Error(`reconcile returned ${result.kind}, expected updated`);
  return result.snapshot;
}

describe("reconciledChange", () => {
  it("names the entries reconcile wrote (introduced, updated) in composition order and the keys it removed", async () => {
    const changed = numberSource("t/changed", 1);
    const kept = numberSource("t/kept", 2);
    const gone = numberSource("t/gone", 3);
    const later = numberSource("t/later", SystemContext.absent);
    const context = SystemContext.combine([later.context, changed.context, kept.context, gone.context]);
    const first = (await SystemContext.initialize(context)).snapshot;
    changed.state.value = 10;
    gone.state.value = SystemContext.absent;
    later.state.value = 4;
    const next = await updated(context, first);
    expect(reconciledChange(next, first)).to.deep.equal({ written: ["t/later", "t/changed"], removed: ["t/gone"] });
    expect(next["t/kept"]).to.equal(first["t/kept"]);
  });

  it("is undefined for a snapshot other than the very one reconciled from, and for a snapshot initialize made", async () => {
    const source = numberSource("t/a", 1);
    const context = SystemContext.combine([source.context]);
    const first = (await SystemContext.initialize(context)).snapshot;
    source.state.value = 2;
    const next = await updated(context, first);
    expect(reconciledChange(next, { ...first })).to.equal(undefined);
    expect(reconciledChange(first, first)).to.equal(undefined);
    expect(reconciledChange(next, next)).to.equal(undefined);
  });

  it("keeps no predecessor snapshot alive", async () => {
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as () => void;
    const source = numberSource("t/a", 0);
    const context = SystemContext.combine([source.context]);
    let snapshot = (await SystemContext.initialize(context)).snapshot;
    const firsts: Array<WeakRef<Snapshot>> = [];
    for (let i = 1; i <= 20; i++) {
      if (i <= 5) firsts.push(new WeakRef(snapshot));
      source.state.value = i;
      snapshot = await updated(context, snapshot);
    }
    // Collected once the test no longer holds them: a WeakRef is kept until the current job ends.
    await new Promise((resolve) => setImmediate(resolve));
    gc();
    expect(firsts.map((ref) => ref.deref() === undefined)).to.deep.equal([true, true, true, true, true]);
    expect(snapshot["t/a"]?.value).to.equal(20);
  });
});

describe("snapshotChange", () => {
  it("writes what reconcile recorded, the same as comparing every entry, over random changes", async () => {
    const sources = Array.from({ length: 12 }, (_, i) => numberSource(`t/s${i}`, i % 3 === 0 ? SystemContext.absent : i));
    const context = SystemContext.combine(sources.map((s) => s.context));
    let snapshot = (await SystemContext.initialize(context)).snapshot;
    let seed = 7;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    let compared = 0;
    for (let round = 0; round < 60; round++) {
      for (const source of sources) {
        const roll = random();
        if (roll < 0.15) source.state.value = SystemContext.absent;
        else if (roll < 0.4) source.state.value = Math.floor(random() * 5);
      }
      const result = await SystemContext.reconcile(context, snapshot);
      if (result.kind !== "updated") continue;
      const recorded = snapshotChange(result.snapshot, snapshot);
      // A shallow copy holds the same entries but is not the snapshot reconciled from: compared entry by entry.
      const byEntry = snapshotChange(result.snapshot, { ...snapshot });
      const sorted = (change: typeof recorded) => ({
        written: change.keys.map((key, i) => [key, change.entries[i]]).sort(),
        removed: [...change.removed].sort(),
      });
      expect(sorted(recorded), `round ${round}`).to.deep.equal(sorted(byEntry));
      compared += 1;
      snapshot = result.snapshot;
    }
    expect(compared).to.be.greaterThan(30);
  });
});
