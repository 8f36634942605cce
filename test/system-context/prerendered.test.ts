// A pre-rendered source (what an isolated plugin's observation becomes in the host): what
// arrives is checked before it is trusted, and a refused value names where it went wrong.

import { expect } from "chai";
import {
  combine,
  initialize,
  KeyInvalid,
  type PrerenderedObservation,
  prerendered,
  prerenderedGroup,
  reconcile,
  type SourceFault,
} from "../../core/system-context/index.ts";
import { type SystemContext, sourcesOf } from "../../core/system-context/source.ts";

function arriving(value: unknown, given: { maxDepth?: number; maxValueBytes?: number } = {}) {
  const limits = { maxDepth: 64, maxValueBytes: 1024 * 1024, ...given };
  const faults: SourceFault[] = [];
  const observation: PrerenderedObservation = { kind: "present", value, baseline: { ok: true, text: "arrived" } };
  const context = prerendered(
    { key: "remote/x", observe: async () => observation },
    { maxTextLength: 1000, report: (fault) => faults.push(fault), ...limits },
  );
  return { context, faults };
}

describe("SystemContext: pre-rendered sources", () => {
  it("an invalid key throws KeyInvalid naming the key", () => {
    const make = () =>
      prerendered(
        { key: "Remote", observe: async () => ({ kind: "absent" }) },
        { maxTextLength: 1000, maxDepth: 64, maxValueBytes: 1024, report: () => {} },
      );
    expect(make).to.throw(KeyInvalid, /^invalid Context Source key "Remote": expected "namespace\/name"/);
  });

  it("a plain value within the limits is admitted as it arrived", async () => {
    const { context, faults } = arriving({ a: [1, { b: "ok" }], c: null });
    const generation = await initialize(context);
    expect(faults).to.deep.equal([]);
    expect(generation.baseline).to.contain("arrived");
    expect(generation.snapshot["remote/x"]?.value).to.deep.equal({ a: [1, { b: "ok" }], c: null });
  });

  for (const [what, value, limits, path, reason] of [
    ["a lone surrogate deep inside", { a: [1, { "b/c": "\ud800" }] }, {}, "/a/1/b~1c", "lone surrogate"],
    ["a value nested too deep", { a: { b: { c: 1 } } }, { maxDepth: 2 }, "/a/b", "deeper than the limit of 2"],
    ["a value too large", { a: ["x".repeat(40), "y".repeat(40)] }, { maxValueBytes: 60 }, "/a/1", "larger than the limit of 60"],
    ["a number that is not finite", { n: [0, Number.NaN] }, {}, "/n/1", "not a finite number"],
    ["a forbidden key", JSON.parse('{"a":{"__proto__":1}}'), {}, "/a/__proto__", 'forbidden key "__proto__"'],
  ] as const) {
    it(`${what} is refused, naming the JSON Pointer ${path}; the source is unavailable`, async () => {
      const { context, faults } = arriving(value, limits);
      const generation = await initialize(context);
      expect(generation.snapshot["remote/x"]).to.equal(undefined);
      expect(faults).to.have.length(1);
      const error = faults[0]?.error as { name: string; path: string; reason: string };
      expect(faults[0]?.phase).to.equal("value");
      expect({ name: error.name, path: error.path }).to.deep.equal({ name: "ValueRejected", path });
      expect(error.reason).to.contain(reason);
    });
  }

  it("the same arrival for the admitted value makes the same observation; a new arrival a new one", async () => {
    const admitted = { n: 1 };
    let arrival: PrerenderedObservation = { kind: "present", value: admitted, baseline: { ok: true, text: "n is 1" } };
    const context = prerendered(
      { key: "remote/x", observe: async () => arrival },
      { maxTextLength: 1000, maxDepth: 64, maxValueBytes: 1024, report: () => {} },
    );
    const [source] = sourcesOf(context);
    const first = await source?.observe(admitted);
    expect(await source?.observe(admitted)).to.equal(first);
    expect(await source?.observe({ n: 1 })).to.not.equal(first);
    arrival = { ...arrival };
    const next = await source?.observe(admitted);
    expect(next).to.not.equal(first);
    expect(next?.kind === "present" && next.baseline()).to.deep.equal({ ok: true, text: "n is 1" });
  });

  it("the sources of a group are observed by one call, each told its admitted value, in composition order", async () => {
    const calls: { keys: readonly string[]; stored: readonly unknown[] }[] = [];
    const group = {
      async observe(keys: readonly string[], stored: readonly unknown[]) {
        calls.push({ keys, stored });
        return keys.map((key): PrerenderedObservation => ({ kind: "present", value: key, baseline: { ok: true, text: key } }));
      },
    };
    const limits = { maxTextLength: 1000, maxDepth: 64, maxValueBytes: 1024, report: () => {} };
    const [a, b] = prerenderedGroup(["remote/a", "remote/b"], group, limits);
    const context = combine([b as SystemContext, a as SystemContext]);
    const { baseline, snapshot } = await initialize(context);
    expect(baseline).to.equal("remote/b\n\nremote/a");
    expect(calls.splice(0)).to.deep.equal([{ keys: ["remote/b", "remote/a"], stored: [undefined, undefined] }]);
    expect(await reconcile(context, snapshot)).to.deep.equal({ kind: "unchanged" });
    expect(calls).to.deep.equal([{ keys: ["remote/b", "remote/a"], stored: ["remote/b", "remote/a"] }]);
  });

  it("a group's call that rejects is a load fault of each of its sources, which are unavailable", async () => {
    const faults: SourceFault[] = [];
    const group = { observe: async () => Promise.reject(new Error("the worker went away")) };
    const limits = { maxTextLength: 1000, maxDepth: 64, maxValueBytes: 1024, report: (fault: SourceFault) => faults.push(fault) };
    const generation = await initialize(combine(prerenderedGroup(["remote/a", "remote/b"], group, limits)));
    expect(generation).to.deep.equal({ baseline: "", snapshot: {} });
    expect(faults.map(({ key, phase }) => ({ key, phase }))).to.deep.equal([
      { key: "remote/a", phase: "load" },
      { key: "remote/b", phase: "load" },
    ]);
  });
});
