// One `it` per semantic rule of SPEC section 2 and per Relationship of CONTEXT.md
// owned by the pure SystemContext layer.

import { readdirSync, readFileSync } from "node:fs";
import vm from "node:vm";
import { expect } from "chai";
import Type from "typebox";
import { isSameJson, type Json, toPlainJson } from "../../core/system-context/json.ts";
import * as SystemContext from "../../core/system-context.ts";
import { numberSource } from "./sources.ts";

const { make, combine, empty, initialize, reconcile, replace, unavailable, absent } = SystemContext;

function deferred<T>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

describe("SystemContext: composition", () => {
  it("combines sources in caller order", async () => {
    const a = numberSource("z/last", 1);
    const b = numberSource("a/first", 2);
    const generation = await initialize(combine([a.context, b.context]));
    expect(generation.baseline).to.equal("z/last is 1\n\na/first is 2");
    expect(Object.keys(generation.snapshot)).to.deep.equal(["z/last", "a/first"]);
  });

  it("empty is the identity of combine", async () => {
    const a = numberSource("a/x", 1);
    const left = await initialize(combine([empty, a.context, empty]));
    const alone = await initialize(a.context);
    expect(left).to.deep.equal(alone);
  });

  it("a System Context is an opaque carrier: whatever it composes, it shows no fields and cannot be altered", async () => {
    const one = numberSource("a/x", 1).context;
    const both = combine([one, numberSource("b/y", 2).context]);
    for (const context of [empty, one, both]) {
      expect(Object.keys(context)).to.deep.equal([]);
      expect(JSON.stringify(context)).to.equal("{}");
      expect(Object.isFrozen(context)).to.equal(true);
    }
    // @ts-expect-error -- the carrier's type exposes no sources either
    expect(both.sources).to.equal(undefined);
    // Composing it again never changes what it carries.
    combine([both, numberSource("c/z", 3).context]);
    expect((await initialize(both)).baseline).to.equal("a/x is 1\n\nb/y is 2");
  });

  it("an empty context initializes to an empty baseline and snapshot", async () => {
    expect(await initialize(empty)).to.deep.equal({ baseline: "", snapshot: {} });
  });

  it("a repeated key fails composition synchronously with DuplicateKeyError naming the key", () => {
    const a = numberSource("a/x", 1);
    const again = numberSource("a/x", 2);
    let error: unknown;
    try {
      combine([a.context, numberSource("b/y", 1).context, again.context]);
    } catch (e) {
      error = e;
    }
    expect(error).to.be.instanceOf(SystemContext.DuplicateKeyError);
    expect((error as InstanceType<typeof SystemContext.DuplicateKeyError>).key).to.equal("a/x");
  });

  it("keys are namespaced: isKey accepts namespace/name and rejects the rest", () => {
    for (const good of ["core/date", "git/branch", "a.b-c_d/x/y.z", "0/0"])
      expect(SystemContext.isKey(good), good).to.equal(true);
    for (const bad of ["date", "Core/date", "/x", "core/", "-a/b", "a/-b", "a b/c", "", "a/B", 3])
      expect(SystemContext.isKey(bad), String(bad)).to.equal(false);
  });

  it("make with an invalid key throws KeyInvalid naming the key", () => {
    const makeBadKey = () =>
      make({ key: "NotAKey", schema: Type.Number(), load: () => 1, baseline: () => "b", update: () => "u" });
    expect(makeBadKey).to.throw(SystemContext.KeyInvalid, /^invalid Context Source key "NotAKey": expected "namespace\/name"/);
    const error = (() => {
      try {
        makeBadKey();
      } catch (caught) {
        return caught;
      }
    })() as InstanceType<typeof SystemContext.KeyInvalid>;
    expect(error).to.be.instanceOf(SystemContext.SystemContextError);
    expect({ name: error.name, key: error.key }).to.deep.equal({ name: "KeyInvalid", key: "NotAKey" });
  });

  it("a value that is not plain JSON throws ValueNotPlainJson naming the JSON Pointer of the offending part", () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = { again: cyclic };
    const error = (() => {
      try {
        toPlainJson({ list: [1, cyclic] });
      } catch (caught) {
        return caught;
      }
    })() as InstanceType<typeof SystemContext.ValueNotPlainJson>;
    expect(error).to.be.instanceOf(SystemContext.ValueNotPlainJson).and.instanceOf(SystemContext.SystemContextError);
    expect({ name: error.name, path: error.path, reason: error.reason, message: error.message }).to.deep.equal({
      name: "ValueNotPlainJson",
      path: "/list/1/self/again",
      reason: "is a cycle",
      message: "value at /list/1/self/again is a cycle",
    });
    expect(() => toPlainJson(new Map())).to.throw(SystemContext.ValueNotPlainJson, /^value is a Map object, not plain JSON$/);
  });

  it("a value made in another realm is plain JSON when its objects are plain there", () => {
    const foreign = vm.runInNewContext('({ list: [1, { a: "b" }], none: Object.create(null) })') as object;
    expect(Object.getPrototypeOf(foreign)).to.not.equal(Object.prototype);
    expect(toPlainJson(foreign)).to.deep.equal({ list: [1, { a: "b" }], none: {} });
    expect(isSameJson(foreign as Json, { none: {}, list: [1, { a: "b" }] })).to.equal(true);
    expect(() => toPlainJson(vm.runInNewContext("({ at: new Map() })"))).to.throw(
      SystemContext.ValueNotPlainJson,
      /^value at \/at is a Map object, not plain JSON$/,
    );
  });
});

describe("SystemContext: observation", () => {
  it("every operation observes each source exactly once", async () => {
    const a = numberSource("a/x", 1);
    const b = numberSource("b/y", 2);
    const ctx = combine([a.context, b.context]);
    const generation = await initialize(ctx);
    await reconcile(ctx, generation.snapshot);
    await replace(ctx, generation.snapshot);
    expect([a.state.loads, b.state.loads]).to.deep.equal([3, 3]);
  });

  it("sources are observed concurrently and results keep composition order", async () => {
    const slow = deferred<number>();
    const started: string[] = [];
    const first = make({
      key: "a/slow",
      schema: Type.Number(),
      load: () => {
        started.push("a/slow");
        return slow.promise;
      },
      baseline: (n) => `slow ${n}`,
      update: (_p, n) => `slow ${n}`,
    });
    const second = make({
      key: "b/fast",
      schema: Type.Number(),
      load: async () => {
        started.push("b/fast");
        return 2;
      },
      baseline: (n) => `fast ${n}`,
      update: (_p, n) => `fast ${n}`,
    });
    const pending = initialize(combine([first, second]));
    await new Promise((r) => setImmediate(r));
    // The second load started while the first was still pending.
    expect(started).to.deep.equal(["a/slow", "b/fast"]);
    slow.resolve(1);
    expect((await pending).baseline).to.equal("slow 1\n\nfast 2");
  });

  it("loaders are the only effects: the System Context modules import nothing but TypeBox and each other, never the file system or the instruction service", () => {
    const folder = new URL("../../core/system-context/", import.meta.url);
    const files = readdirSync(folder).filter((name) => name.endsWith(".ts"));
    expect(files).to.include.members(["index.ts", "reconcile.ts", "source.ts", "snapshot.ts"]);
    let scanned = 0;
    for (const name of files) {
      const code = readFileSync(new URL(name, folder), "utf8");
      const specifiers = [
        ...code.matchAll(/\bfrom\s+["']([^"']+)["']/g),
        ...code.matchAll(/\bimport\s*\(\s*["']([^"']+)["']/g),
        ...code.matchAll(/^\s*import\s+["']([^"']+)["']/gm),
        ...code.matchAll(/\brequire\s*\(\s*["']([^"']+)["']/g),
      ].map((match) => match[1] as string);
      scanned += specifiers.length;
      for (const specifier of specifiers) {
        expect(specifier, `${name} imports ${specifier}`).to.match(/^(?:\.\/[a-z-]+\.ts|typebox(?:\/(?:compile|value))?)$/);
      }
      expect(code, `${name} reaches for the process`).to.not.match(/\bprocess\.|\bglobalThis\b|\bDate\.now\(|\bfetch\(/);
    }
    expect(scanned, "import specifiers found").to.be.greaterThan(10);
  });

  it("a core loader that throws makes the operation reject with that error", async () => {
    const boom = new Error("disk on fire");
    const ctx = make({
      key: "core/broken",
      schema: Type.Number(),
      load: () => {
        throw boom;
      },
      baseline: () => "b",
      update: () => "u",
    });
    let error: unknown;
    await initialize(ctx).catch((e) => {
      error = e;
    });
    expect(error).to.equal(boom);
  });
});

describe("SystemContext: initialize", () => {
  it("renders a Baseline System Context joined by blank lines with its snapshot", async () => {
    const a = numberSource("a/x", 1);
    const b = numberSource("b/y", 2, { removable: false });
    const generation = await initialize(combine([a.context, b.context]));
    expect(generation).to.deep.equal({
      baseline: "a/x is 1\n\nb/y is 2",
      snapshot: { "a/x": { value: 1, removed: "a/x (1) no longer applies" }, "b/y": { value: 2 } },
    });
  });

  it("an unavailable source blocks initialization, listing every such key in order", async () => {
    const ctx = combine([
      numberSource("c/z", unavailable).context,
      numberSource("a/x", 1).context,
      numberSource("b/y", unavailable).context,
    ]);
    let error: unknown;
    await initialize(ctx).catch((e) => {
      error = e;
    });
    expect(error).to.be.instanceOf(SystemContext.InitializationBlocked);
    expect((error as InstanceType<typeof SystemContext.InitializationBlocked>).keys).to.deep.equal(["c/z", "b/y"]);
  });

  it("an absent source is left out of the Baseline", async () => {
    const generation = await initialize(combine([numberSource("a/x", absent).context, numberSource("b/y", 2).context]));
    expect(generation.baseline).to.equal("b/y is 2");
    expect(Object.keys(generation.snapshot)).to.deep.equal(["b/y"]);
  });
});

describe("SystemContext: reconcile", () => {
  it("no change is unchanged", async () => {
    const ctx = combine([numberSource("a/x", 1).context, numberSource("b/y", 2).context]);
    const { snapshot } = await initialize(ctx);
    expect(await reconcile(ctx, snapshot)).to.deep.equal({ kind: "unchanged" });
  });

  it("a changed source produces one Mid-Conversation System Message with its newly effective state", async () => {
    const a = numberSource("a/x", 1);
    const { snapshot } = await initialize(a.context);
    a.state.value = 5;
    const result = await reconcile(a.context, snapshot);
    expect(result).to.deep.equal({
      kind: "updated",
      text: "a/x is now 5 (was 1)",
      snapshot: { "a/x": { value: 5, removed: "a/x (5) no longer applies" } },
      change: { written: ["a/x"], removed: [] },
    });
  });

  it("changes from several sources combine into one text in composition order, removals last in key order", async () => {
    const z = numberSource("z/z", 1);
    const a = numberSource("a/a", 1);
    const gone1 = numberSource("m/gone", 1);
    const gone2 = numberSource("b/gone", 1);
    const { snapshot } = await initialize(combine([z.context, gone1.context, a.context, gone2.context]));
    z.state.value = 2;
    a.state.value = 2;
    const fresh = numberSource("c/new", 7);
    const result = await reconcile(combine([z.context, a.context, fresh.context]), snapshot);
    expect(result.kind).to.equal("updated");
    if (result.kind !== "updated") return;
    expect(result.text).to.equal(
      [
        "z/z is now 2 (was 1)",
        "a/a is now 2 (was 1)",
        "c/new is 7",
        "b/gone (1) no longer applies",
        "m/gone (1) no longer applies",
      ].join("\n\n"),
    );
    expect(Object.keys(result.snapshot)).to.deep.equal(["z/z", "a/a", "c/new"]);
  });

  it("a newly registered source absent from the snapshot emits its baseline rendering once", async () => {
    const a = numberSource("a/x", 1);
    const { snapshot } = await initialize(a.context);
    const b = numberSource("b/new", 3);
    const ctx = combine([a.context, b.context]);
    const first = await reconcile(ctx, snapshot);
    expect(first).to.include({ kind: "updated", text: "b/new is 3" });
    if (first.kind !== "updated") return;
    expect(await reconcile(ctx, first.snapshot)).to.deep.equal({ kind: "unchanged" });
  });

  it("removal text is pre-rendered from the admitted value at admission time", async () => {
    const a = numberSource("a/x", 1);
    const { snapshot } = await initialize(a.context);
    a.state.value = 2;
    const updated = await reconcile(a.context, snapshot);
    if (updated.kind !== "updated") throw new Error(updated.kind);
    expect(updated.snapshot["a/x"]?.removed).to.equal("a/x (2) no longer applies");
    // The source's removal renderer is gone with it; the stored text is what the model sees.
    expect(await reconcile(empty, updated.snapshot)).to.deep.equal({
      kind: "updated",
      text: "a/x (2) no longer applies",
      snapshot: {},
      change: { written: [], removed: ["a/x"] },
    });
  });

  it("values compare by canonical JSON: object key order is not a change", async () => {
    let value: Record<string, number> = { a: 1, b: 2 };
    const ctx = make({
      key: "a/obj",
      schema: Type.Record(Type.String(), Type.Number()),
      load: () => value,
      baseline: (v) => JSON.stringify(v),
      update: (_p, v) => JSON.stringify(v),
    });
    const { snapshot } = await initialize(ctx);
    value = { b: 2, a: 1 };
    expect(await reconcile(ctx, snapshot)).to.deep.equal({ kind: "unchanged" });
    value = { b: 2, a: 3 };
    expect((await reconcile(ctx, snapshot)).kind).to.equal("updated");
  });

  it("unchanged sources keep their stored entry byte for byte", async () => {
    const a = numberSource("a/x", 1);
    const b = numberSource("b/y", 1);
    const ctx = combine([a.context, b.context]);
    // A stored entry whose removal text differs from what the renderer would give today.
    const stored = { "a/x": { value: 1, removed: "written by an older renderer" }, "b/y": { value: 1 } };
    b.state.value = 2;
    const result = await reconcile(ctx, stored);
    if (result.kind !== "updated") throw new Error(result.kind);
    expect(result.snapshot["a/x"]).to.equal(stored["a/x"]);
  });

  it("an unavailable admitted source keeps its snapshot and emits nothing", async () => {
    const a = numberSource("a/x", 1);
    const { snapshot } = await initialize(a.context);
    a.state.value = unavailable;
    expect(await reconcile(a.context, snapshot)).to.deep.equal({ kind: "unchanged" });
    const b = numberSource("b/y", 1);
    const result = await reconcile(combine([a.context, b.context]), snapshot);
    if (result.kind !== "updated") throw new Error(result.kind);
    expect(result.snapshot["a/x"]).to.equal(snapshot["a/x"]);
    expect(result.text).to.equal("b/y is 1");
  });

  it("a never-admitted unavailable source is omitted until its first successful load", async () => {
    const a = numberSource("a/x", 1);
    const { snapshot } = await initialize(a.context);
    const late = numberSource("b/late", unavailable);
    const ctx = combine([a.context, late.context]);
    expect(await reconcile(ctx, snapshot)).to.deep.equal({ kind: "unchanged" });
    late.state.value = 4;
    expect(await reconcile(ctx, snapshot)).to.include({ kind: "updated", text: "b/late is 4" });
  });

  it("absent after admission emits the stored removal text (unlike unavailable)", async () => {
    const a = numberSource("a/x", 1);
    const { snapshot } = await initialize(a.context);
    a.state.value = absent;
    expect(await reconcile(a.context, snapshot)).to.deep.equal({
      kind: "updated",
      text: "a/x (1) no longer applies",
      snapshot: {},
      change: { written: [], removed: ["a/x"] },
    });
  });

  it("a stored value that no longer decodes escalates to replacement from the same observation", async () => {
    const a = numberSource("a/x", 1);
    const { snapshot } = await initialize(a.context);
    let updates = 0;
    let loads = 0;
    const changed = make({
      key: "a/x",
      schema: Type.String(),
      load: () => {
        loads++;
        return "one";
      },
      baseline: (s) => `a/x says ${s}`,
      update: () => {
        updates++;
        return "never";
      },
    });
    const result = await reconcile(changed, snapshot);
    expect(result).to.deep.equal({
      kind: "replaced",
      generation: { baseline: "a/x says one", snapshot: { "a/x": { value: "one" } } },
    });
    expect({ loads, updates }).to.deep.equal({ loads: 1, updates: 0 });
  });

  it("an admitted source gone without removal text escalates to replacement", async () => {
    const a = numberSource("a/x", 1, { removable: false });
    const b = numberSource("b/y", 2);
    const { snapshot } = await initialize(combine([a.context, b.context]));
    b.state.value = 3;
    const result = await reconcile(b.context, snapshot);
    expect(result).to.deep.equal({
      kind: "replaced",
      generation: { baseline: "b/y is 3", snapshot: { "b/y": { value: 3, removed: "b/y (3) no longer applies" } } },
    });
    expect(b.state.updates).to.equal(0);
  });

  it("absent after admission without removal text escalates like a gone source", async () => {
    const a = numberSource("a/x", 1, { removable: false });
    const { snapshot } = await initialize(a.context);
    a.state.value = absent;
    expect(await reconcile(a.context, snapshot)).to.deep.equal({
      kind: "replaced",
      generation: { baseline: "", snapshot: {} },
    });
  });

  it("escalation is blocked while an admitted source is unavailable", async () => {
    const a = numberSource("a/x", 1, { removable: false });
    const b = numberSource("b/y", 2);
    const { snapshot } = await initialize(combine([a.context, b.context]));
    b.state.value = unavailable;
    expect(await reconcile(b.context, snapshot)).to.deep.equal({ kind: "replacement-blocked", keys: ["b/y"] });
  });

  it("renderers get the loaded value as current and the decoded stored value as previous", async () => {
    let now = new Date("2026-12-02T10:00:00.000Z");
    const seen: unknown[] = [];
    const ctx = make({
      key: "core/clock",
      schema: Type.Codec(Type.String())
        .Decode((s) => new Date(s))
        .Encode((d: Date) => d.toISOString()),
      load: () => now,
      baseline: (d) => `it is ${d.toISOString()}`,
      update: (previous, current) => {
        seen.push(previous, current);
        return `it is now ${current.toISOString()}`;
      },
    });
    const { snapshot } = await initialize(ctx);
    expect(snapshot["core/clock"]).to.deep.equal({ value: "2026-12-02T10:00:00.000Z" });
    now = new Date("2026-12-03T10:00:00.000Z");
    const result = await reconcile(ctx, snapshot);
    expect(result).to.include({ kind: "updated", text: "it is now 2026-12-03T10:00:00.000Z" });
    expect(seen[0]).to.be.instanceOf(Date);
    expect((seen[0] as Date).toISOString()).to.equal("2026-12-02T10:00:00.000Z");
    expect(seen[1]).to.equal(now);
  });

  it("differently typed sources compose uniformly; the codec compares and stores each value, and renderers run only when their text is needed", async () => {
    const rendered: string[] = [];
    const note = (renderer: string, text: string) => {
      rendered.push(renderer);
      return text;
    };
    let since = new Date("2026-03-01T09:00:00.000Z");
    let tags = ["alpha"];
    // A Date (through a codec) and a string array: one carrier type for both.
    const sinceContext: SystemContext.SystemContext = make({
      key: "a/since",
      schema: Type.Codec(Type.String())
        .Decode((s) => new Date(s))
        .Encode((d: Date) => d.toISOString()),
      load: () => since,
      baseline: (d) => note("since baseline", `since ${d.toISOString()}`),
      update: (_p, d) => note("since update", `since is now ${d.toISOString()}`),
      removed: (d) => note("since removed", `since ${d.toISOString()} no longer applies`),
    });
    const tagsContext: SystemContext.SystemContext = make({
      key: "b/tags",
      schema: Type.Array(Type.String()),
      load: () => tags,
      baseline: (t) => note("tags baseline", `tags ${t.join(",")}`),
      update: (_p, t) => note("tags update", `tags are now ${t.join(",")}`),
      removed: (t) => note("tags removed", `tags ${t.join(",")} no longer apply`),
    });
    const context = combine([sinceContext, tagsContext]);

    const { baseline, snapshot } = await initialize(context);
    expect(baseline).to.equal("since 2026-03-01T09:00:00.000Z\n\ntags alpha");
    expect(snapshot).to.deep.equal({
      "a/since": { value: "2026-03-01T09:00:00.000Z", removed: "since 2026-03-01T09:00:00.000Z no longer applies" },
      "b/tags": { value: ["alpha"], removed: "tags alpha no longer apply" },
    });
    // Each admitted value needs its Baseline text and its pre-rendered removal text, nothing more.
    expect(rendered.splice(0)).to.deep.equal(["since baseline", "since removed", "tags baseline", "tags removed"]);

    // Equal under the codec though not the same objects: unchanged, and nothing is rendered.
    since = new Date(since.getTime());
    tags = ["alpha"];
    expect(await reconcile(context, snapshot)).to.deep.equal({ kind: "unchanged" });
    expect(rendered).to.deep.equal([]);

    // One source changes: only its update (and its new removal text) is rendered.
    tags = ["alpha", "beta"];
    const next = await reconcile(context, snapshot);
    expect(next).to.deep.include({ kind: "updated", text: "tags are now alpha,beta" });
    expect(rendered.splice(0)).to.deep.equal(["tags update", "tags removed"]);
  });

  it("a stored value is decoded only for a source whose encoded value changed", async () => {
    let decodes = 0;
    const schema = Type.Codec(Type.Number())
      .Decode((n) => {
        decodes++;
        return { n };
      })
      .Encode((v: { n: number }) => v.n);
    let value = { n: 1 };
    const ctx = make({ key: "a/x", schema, load: () => value, baseline: (v) => `n=${v.n}`, update: (_p, v) => `n=${v.n}` });
    const { snapshot } = await initialize(ctx);
    await reconcile(ctx, snapshot);
    expect(decodes).to.equal(0);
    value = { n: 2 };
    await reconcile(ctx, snapshot);
    expect(decodes).to.equal(1);
  });
});

describe("SystemContext: replace", () => {
  it("replaces with a fresh generation of the available sources", async () => {
    const a = numberSource("a/x", 1);
    const late = numberSource("b/late", unavailable);
    const { snapshot } = await initialize(a.context);
    a.state.value = 2;
    expect(await replace(combine([a.context, late.context]), snapshot)).to.deep.equal({
      kind: "replaced",
      generation: { baseline: "a/x is 2", snapshot: { "a/x": { value: 2, removed: "a/x (2) no longer applies" } } },
    });
  });

  it("replacement is blocked while any admitted source is unavailable, keys in composition order", async () => {
    const c = numberSource("c/z", 1);
    const a = numberSource("a/x", 1);
    const { snapshot } = await initialize(combine([c.context, a.context]));
    c.state.value = unavailable;
    a.state.value = unavailable;
    expect(await replace(combine([c.context, a.context]), snapshot)).to.deep.equal({
      kind: "replacement-blocked",
      keys: ["c/z", "a/x"],
    });
  });
});

describe("SystemContext: replaceOrReconcile", () => {
  it("replaces with a fresh generation when it can, observing each source once", async () => {
    const a = numberSource("a/x", 1);
    const { snapshot } = await initialize(a.context);
    a.state.value = 2;
    const loads = a.state.loads;
    expect(await SystemContext.replaceOrReconcile(a.context, snapshot)).to.deep.equal({
      kind: "replaced",
      generation: { baseline: "a/x is 2", snapshot: { "a/x": { value: 2, removed: "a/x (2) no longer applies" } } },
    });
    expect(a.state.loads - loads).to.equal(1);
  });

  it("while the replacement is blocked, reconciles the same observation: the epoch goes on with the changes", async () => {
    const c = numberSource("c/z", 1);
    const a = numberSource("a/x", 1);
    const context = combine([c.context, a.context]);
    const { snapshot } = await initialize(context);
    c.state.value = unavailable;
    a.state.value = 2;
    const loads = [c.state.loads, a.state.loads];
    expect(await SystemContext.replaceOrReconcile(context, snapshot)).to.deep.equal({
      kind: "replacement-blocked",
      keys: ["c/z"],
      reconciled: {
        kind: "updated",
        text: "a/x is now 2 (was 1)",
        snapshot: { "c/z": snapshot["c/z"], "a/x": { value: 2, removed: "a/x (2) no longer applies" } },
        change: { written: ["a/x"], removed: [] },
      },
    });
    expect([c.state.loads - (loads[0] as number), a.state.loads - (loads[1] as number)]).to.deep.equal([1, 1]);
  });
});

describe("SystemContext: errors and strictness", () => {
  for (const renderer of ["baseline", "update", "removed"] as const) {
    it(`an empty ${renderer} rendering is an error naming the key and the renderer`, async () => {
      let value = 1;
      const texts = { baseline: "b", update: "u", removed: "r", [renderer]: "" };
      const ctx = make({
        key: "a/empty",
        schema: Type.Number(),
        load: () => value,
        baseline: () => texts.baseline,
        update: () => texts.update,
        removed: () => texts.removed,
      });
      let error: unknown;
      try {
        const first = await initialize(ctx);
        value = 2;
        await reconcile(ctx, first.snapshot);
      } catch (e) {
        error = e;
      }
      expect(error).to.be.instanceOf(SystemContext.RenderFailed);
      expect((error as Error).message)
        .to.contain("a/empty")
        .and.contain(`"${renderer}"`);
    });
  }

  it("a core renderer that throws makes the operation reject with that error, like a throwing core loader", async () => {
    const boom = new Error("renderer on fire");
    const ctx = make({
      key: "core/fragile",
      schema: Type.Number(),
      load: () => 1,
      baseline: () => {
        throw boom;
      },
      update: () => "u",
    });
    let error: unknown;
    await initialize(ctx).catch((e) => {
      error = e;
    });
    expect(error).to.equal(boom);
  });

  it("a value the schema rejects is an error naming the key and the schema's first error", async () => {
    const ctx = make({
      key: "a/typed",
      schema: Type.Object({ n: Type.Number() }),
      load: () => ({ n: "three" }) as unknown as { n: number },
      baseline: () => "b",
      update: () => "u",
    });
    let error: unknown;
    await initialize(ctx).catch((e) => {
      error = e;
    });
    expect(error).to.be.instanceOf(SystemContext.ValueRejected);
    expect((error as Error).message)
      .to.contain("a/typed")
      .and.contain("/n")
      .and.contain("must be number");
  });

  it("encoding is strict: nothing is converted, defaulted or stripped", async () => {
    const schema = Type.Object({ n: Type.Number({ default: 1 }) }, { additionalProperties: false });
    const ctx = make({
      key: "a/strict",
      schema,
      load: () => ({ n: 2, extra: true }) as { n: number },
      baseline: () => "b",
      update: () => "u",
    });
    let error: unknown;
    await initialize(ctx).catch((e) => {
      error = e;
    });
    expect(error).to.be.instanceOf(SystemContext.ValueRejected);
    const loose = make({
      key: "a/loose",
      schema: Type.Object({ n: Type.Number() }),
      load: () => ({ n: 2, extra: true }),
      baseline: () => "b",
      update: () => "u",
    });
    expect((await initialize(loose)).snapshot["a/loose"]?.value).to.deep.equal({ n: 2, extra: true });
  });

  it("decoding is strict: a stored value that only a lenient decode would accept escalates", async () => {
    const a = make({
      key: "a/x",
      schema: Type.Object({ n: Type.Number() }, { additionalProperties: false }),
      load: () => ({ n: 2 }),
      baseline: (v) => `n=${v.n}`,
      update: (_p, v) => `n now ${v.n}`,
      removed: () => "gone",
    });
    const result = await reconcile(a, { "a/x": { value: { n: 1, extra: "x" }, removed: "gone" } });
    expect(result.kind).to.equal("replaced");
  });

  it("a value that is not plain JSON once encoded is rejected with its path", async () => {
    const ctx = make({
      key: "a/weird",
      schema: Type.Object({ when: Type.Unknown() }),
      load: () => ({ when: new Date(0) }),
      baseline: () => "b",
      update: () => "u",
    });
    let error: unknown;
    await initialize(ctx).catch((e) => {
      error = e;
    });
    expect(error).to.be.instanceOf(SystemContext.ValueRejected);
    expect((error as Error).message)
      .to.contain("a/weird")
      .and.contain("/when");
  });
});

describe("SystemContext: snapshots handed to reconcile and replace", () => {
  const invalid: Array<[string, unknown]> = [
    ["a key that is not namespaced", { date: { value: 1 } }],
    ["an empty removal text", { "a/x": { value: 1, removed: "" } }],
    ["a __proto__ key deep inside", JSON.parse('{"a/x":{"value":{"deep":{"__proto__":{"polluted":true}}}}}')],
  ];
  for (const [what, snapshot] of invalid) {
    it(`a snapshot with ${what} is refused with SnapshotInvalid before any source is loaded`, async () => {
      const a = numberSource("a/x", 1);
      for (const operation of [reconcile, replace]) {
        let error: unknown;
        await operation(a.context, snapshot as SystemContext.Snapshot).catch((e: unknown) => {
          error = e;
        });
        expect(error).to.be.instanceOf(SystemContext.SnapshotInvalid);
      }
      expect(a.state.loads).to.equal(0);
    });
  }
});

describe("SystemContext: parseSnapshot", () => {
  it("accepts a JSON round-tripped snapshot and returns an equal copy", async () => {
    const { snapshot } = await initialize(combine([numberSource("a/x", 1).context, numberSource("b/y", 2).context]));
    const parsed = SystemContext.parseSnapshot(JSON.parse(JSON.stringify(snapshot)));
    expect(parsed).to.deep.equal(snapshot);
  });

  const bad: Array<[string, unknown, RegExp]> = [
    ["not an object", [1], /expected an object/],
    ["a key that is not namespaced", { date: { value: 1 } }, /"date" is not a namespaced/],
    ["an empty removal text", { "a/x": { value: 1, removed: "" } }, /"a\/x".*removed/],
    ["a missing value", { "a/x": { removed: "r" } }, /"a\/x".*value/],
    ["an unknown field", { "a/x": { value: 1, extra: 1 } }, /"a\/x"/],
    ["a __proto__ key deep inside", JSON.parse('{"a/x":{"value":{"deep":{"__proto__":{"polluted":true}}}}}'), /__proto__/],
    ["a constructor key", { "a/x": { value: { constructor: 1 } } }, /"a\/x".*constructor/],
    ["a non-JSON value", { "a/x": { value: Number.NaN } }, /"a\/x".*finite/],
  ];
  for (const [what, json, message] of bad) {
    it(`rejects ${what}, saying which key and why`, () => {
      expect(() => SystemContext.parseSnapshot(json)).to.throw(SystemContext.SnapshotInvalid, message);
    });
  }
});
