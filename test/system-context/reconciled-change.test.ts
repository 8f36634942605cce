// What reconciling changed (decision 170): an `updated` result names the entries it wrote
// and the keys it removed, in its own value (no side channel), and the store's
// `entryWrites`, which writes only those, agrees with comparing every entry.

import { expect } from "chai";
import { entryWrites } from "../../core/session/store/epoch-rows.ts";
import * as SystemContext from "../../core/system-context.ts";
import { numberSource } from "./sources.ts";

describe("reconcile's change", () => {
  it("names the entries it wrote (introduced, updated) in composition order and the keys it removed", async () => {
    const changed = numberSource("t/changed", 1);
    const kept = numberSource("t/kept", 2);
    const gone = numberSource("t/gone", 3);
    const later = numberSource("t/later", SystemContext.absent);
    const context = SystemContext.combine([later.context, changed.context, kept.context, gone.context]);
    const first = (await SystemContext.initialize(context)).snapshot;
    changed.state.value = 10;
    gone.state.value = SystemContext.absent;
    later.state.value = 4;
    const result = await SystemContext.reconcile(context, first);
    if (result.kind !== "updated") throw new Error(`reconcile returned ${result.kind}, expected updated`);
    expect(result.change).to.deep.equal({ written: ["t/later", "t/changed"], removed: ["t/gone"] });
    expect(result.snapshot["t/kept"]).to.equal(first["t/kept"]);
  });

  it("is the same for the same inputs: reconciling twice from one snapshot gives equal results", async () => {
    const source = numberSource("t/a", 1);
    const context = SystemContext.combine([source.context]);
    const first = (await SystemContext.initialize(context)).snapshot;
    source.state.value = 2;
    const one = await SystemContext.reconcile(context, first);
    const two = await SystemContext.reconcile(context, first);
    expect(one).to.deep.equal(two);
    expect(one.kind === "updated" && one.change).to.deep.equal({ written: ["t/a"], removed: [] });
  });
});

describe("entryWrites", () => {
  it("writes what reconcile's change says, the same as comparing every entry, over random changes", async () => {
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
      const recorded = entryWrites(result.snapshot, snapshot, result.change);
      const byEntry = entryWrites(result.snapshot, snapshot);
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
