// Model-based property test of SPEC section 2. Random sequences of environment
// changes (values, unavailability, absence, sources added and removed, schemas
// changed, removal renderers dropped) and host actions (boundaries, compaction,
// storing the snapshot as JSON) run against SystemContext and against a small
// reference model written from the specification alone.

import { expect } from "chai";
import fc from "fast-check";
import Type from "typebox";
import * as SystemContext from "../../core/system-context.ts";

type Key = string;
type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

// 400 random sessions in `npm test` (~1 s), 10,000 under `npm run test:long`.
const numRuns = process.env.CONTEXT_HOST_LONG ? 10_000 : 400;

/** A small pool, so keys are reused after removal and schema changes. */
const keys = ["a/x", "a/y", "a-b/x", "core/date", "z.q/n-1"] as const;

// ---------------------------------------------------------------------------
// The world: sources whose loaders read mutable state that commands change.
// ---------------------------------------------------------------------------

const kinds = ["num", "str", "date", "iso", "obj"] as const;
type Kind = (typeof kinds)[number];

/** An ISO 8601 timestamp as `Date.prototype.toISOString` writes it. */
const isoPattern = "^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z$";

/**
 * Value schemas; two are codecs of a `Date` (as epoch milliseconds, as ISO text).
 * A stored number decodes as `num` or `date`, a stored ISO text as `str` or `iso`;
 * every other change of kind leaves a stored value that no longer decodes. Strings
 * such as "1" probe strictness: they must not be converted to numbers.
 */
const schemas = {
  num: Type.Number(),
  str: Type.String(),
  date: Type.Codec(Type.Number())
    .Decode((ms: number) => new Date(ms))
    .Encode((d: Date) => d.getTime()),
  iso: Type.Codec(Type.String({ pattern: isoPattern }))
    .Decode((s: string) => new Date(s))
    .Encode((d: Date) => d.toISOString()),
  obj: Type.Object({ a: Type.Number(), b: Type.String() }),
};

type Obj = { a: number; b: string };
type Value = number | string | Date | Obj;

/** A value of `kind`; equal seeds modulo small numbers collide on purpose. */
function sample(kind: Kind, seed: number): Value {
  switch (kind) {
    case "num":
      return seed % 4;
    case "str":
      return ["1", "s", "1970-01-01T00:00:00.001Z"][seed % 3] as string;
    case "date":
    case "iso":
      return new Date([0, 1, 86_400_000][seed % 3] as number);
    case "obj": {
      // Same object, different key order: equal by canonical JSON.
      const a = seed % 2;
      const b = (seed >> 1) % 2 === 0 ? "p" : "q";
      return (seed >> 2) % 2 === 0 ? { a, b } : { b, a };
    }
  }
}

function isObj(value: unknown): value is Obj {
  if (value === null || typeof value !== "object" || Object.getPrototypeOf(value) !== Object.prototype) return false;
  const o = value as Record<string, unknown>;
  return typeof o.a === "number" && typeof o.b === "string";
}

/** Shows a value of `kind`; a renderer handed a value of another type throws, so the mismatch is visible. */
function show(kind: Kind, value: unknown): string {
  const wrong = () => new TypeError(`a ${kind} renderer got ${String(value)} (${typeof value})`);
  switch (kind) {
    case "num":
      if (typeof value !== "number") throw wrong();
      return String(value);
    case "str":
      if (typeof value !== "string") throw wrong();
      return JSON.stringify(value);
    case "date":
    case "iso":
      if (!(value instanceof Date) || Number.isNaN(value.getTime())) throw wrong();
      return value.toISOString();
    case "obj":
      if (!isObj(value)) throw wrong();
      return JSON.stringify(value);
  }
}

const renderBaseline = (key: Key, kind: Kind, current: unknown) => `baseline ${key}=${show(kind, current)}`;
const renderUpdate = (key: Key, kind: Kind, previous: unknown, current: unknown) =>
  `update ${key} ${show(kind, previous)}->${show(kind, current)}`;
const renderRemoved = (key: Key, kind: Kind, previous: unknown) => `removed ${key} was ${show(kind, previous)}`;

type Loaded = { readonly tag: "value"; readonly value: Value } | { readonly tag: "unavailable" } | { readonly tag: "absent" };

interface SourceState {
  kind: Kind;
  loaded: Loaded;
  removable: boolean;
  async: boolean;
}

class World {
  /** Composition order. */
  order: Key[] = [];
  sources = new Map<Key, SourceState>();
  /** Loads per key since the last operation began. */
  loads = new Map<Key, number>();
  pending = 0;
  maxPending = 0;

  state(key: Key): SourceState {
    const state = this.sources.get(key);
    if (state === undefined) throw new Error(`no source ${key}`);
    return state;
  }

  /** The System Context a host composes from the world right now. */
  context(): SystemContext.SystemContext {
    return SystemContext.combine(this.order.map((key) => SystemContext.make(this.source(key, this.state(key)))));
  }

  private source(key: Key, state: SourceState): SystemContext.Source {
    const { kind } = state;
    return {
      key,
      schema: schemas[kind],
      load: () => {
        this.loads.set(key, (this.loads.get(key) ?? 0) + 1);
        const { loaded } = state;
        const result =
          loaded.tag === "unavailable"
            ? SystemContext.unavailable
            : loaded.tag === "absent"
              ? SystemContext.absent
              : loaded.value;
        if (!state.async) return result;
        this.pending++;
        this.maxPending = Math.max(this.maxPending, this.pending);
        return Promise.resolve().then(() => {
          this.pending--;
          return result;
        });
      },
      baseline: (current) => renderBaseline(key, kind, current),
      update: (previous, current) => renderUpdate(key, kind, previous, current),
      ...(state.removable ? { removed: (previous: unknown) => renderRemoved(key, kind, previous) } : {}),
    };
  }
}

// ---------------------------------------------------------------------------
// The reference model, from SPEC section 2.
// ---------------------------------------------------------------------------

type Entry = { value: Json; removed?: string };
type ModelSnapshot = Record<Key, Entry>;
type ModelGeneration = { baseline: string; snapshot: ModelSnapshot };
type ModelReplacement = { kind: "replaced"; generation: ModelGeneration } | { kind: "replacement-blocked"; keys: Key[] };
type ModelReconcile =
  | { kind: "unchanged" }
  | { kind: "updated"; text: string; snapshot: ModelSnapshot; change: { written: Key[]; removed: Key[] } }
  | ModelReplacement;

/** The encoded (JSON) form of a value, as the schema's codec stores it. */
function encode(kind: Kind, value: Value): Json {
  switch (kind) {
    case "num":
    case "str":
      return value as number | string;
    case "date":
      return (value as Date).getTime();
    case "iso":
      return (value as Date).toISOString();
    case "obj":
      return JSON.parse(JSON.stringify(value)) as Json;
  }
}

/** A stored value decoded under the current schema, or `undefined` when it no longer decodes. */
function decode(kind: Kind, stored: Json): { value: Value } | undefined {
  switch (kind) {
    case "num":
      return typeof stored === "number" ? { value: stored } : undefined;
    case "str":
      return typeof stored === "string" ? { value: stored } : undefined;
    case "date":
      return typeof stored === "number" ? { value: new Date(stored) } : undefined;
    case "iso":
      return typeof stored === "string" && new RegExp(isoPattern).test(stored) ? { value: new Date(stored) } : undefined;
    case "obj":
      return isObj(stored) ? { value: JSON.parse(JSON.stringify(stored)) as Obj } : undefined;
  }
}

/** Canonical JSON: object keys sorted. */
function canonical(value: Json): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  return `{${Object.keys(value)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${canonical(value[k] as Json)}`)
    .join(",")}}`;
}

/** Rule 3: the encoded value, and the removal text rendered at admission when the source is removable. */
function admit(key: Key, state: SourceState, value: Value): Entry {
  const entry: Entry = { value: encode(state.kind, value) };
  if (state.removable) entry.removed = renderRemoved(key, state.kind, value);
  return entry;
}

function present(world: World): { key: Key; state: SourceState; value: Value }[] {
  return world.order.flatMap((key) => {
    const state = world.state(key);
    return state.loaded.tag === "value" ? [{ key, state, value: state.loaded.value }] : [];
  });
}

/** A fresh generation of the available sources, in composition order. */
function freshGeneration(world: World): ModelGeneration {
  const texts: string[] = [];
  const snapshot: ModelSnapshot = {};
  for (const { key, state, value } of present(world)) {
    texts.push(renderBaseline(key, state.kind, value));
    snapshot[key] = admit(key, state, value);
  }
  return { baseline: texts.join("\n\n"), snapshot };
}

/** Rule 2. */
function modelInitialize(world: World): { blocked: Key[] } | { generation: ModelGeneration } {
  const blocked = world.order.filter((key) => world.state(key).loaded.tag === "unavailable");
  return blocked.length > 0 ? { blocked } : { generation: freshGeneration(world) };
}

/** Rule 8. */
function modelReplace(world: World, snapshot: ModelSnapshot): ModelReplacement {
  const blocked = world.order.filter((key) => Object.hasOwn(snapshot, key) && world.state(key).loaded.tag === "unavailable");
  if (blocked.length > 0) return { kind: "replacement-blocked", keys: blocked };
  return { kind: "replaced", generation: freshGeneration(world) };
}

type Escalation = "undecodable" | "no removal text";

/** Rules 5, 6, 7, 11 and 12. */
function modelReconcile(world: World, snapshot: ModelSnapshot): { result: ModelReconcile; escalation?: Escalation } {
  const texts: string[] = [];
  const next: ModelSnapshot = {};
  const stillThere = new Set<Key>();
  const written: Key[] = [];
  const removedKeys: Key[] = [];
  for (const key of world.order) {
    const state = world.state(key);
    const stored = Object.hasOwn(snapshot, key) ? snapshot[key] : undefined;
    if (state.loaded.tag === "unavailable") {
      if (stored !== undefined) {
        next[key] = stored;
        stillThere.add(key);
      }
      continue;
    }
    if (state.loaded.tag === "absent") continue;
    const value = state.loaded.value;
    stillThere.add(key);
    if (stored === undefined) {
      texts.push(renderBaseline(key, state.kind, value));
      next[key] = admit(key, state, value);
      written.push(key);
    } else if (canonical(stored.value) === canonical(encode(state.kind, value))) {
      next[key] = stored;
    } else {
      const previous = decode(state.kind, stored.value);
      if (previous === undefined) return { result: modelReplace(world, snapshot), escalation: "undecodable" };
      texts.push(renderUpdate(key, state.kind, previous.value, value));
      next[key] = admit(key, state, value);
      written.push(key);
    }
  }
  for (const key of Object.keys(snapshot).sort()) {
    if (stillThere.has(key)) continue;
    const removed = snapshot[key]?.removed;
    if (removed === undefined) return { result: modelReplace(world, snapshot), escalation: "no removal text" };
    texts.push(removed);
    removedKeys.push(key);
  }
  if (texts.length === 0) return { result: { kind: "unchanged" } };
  return { result: { kind: "updated", text: texts.join("\n\n"), snapshot: next, change: { written, removed: removedKeys } } };
}

// ---------------------------------------------------------------------------
// Commands, and a host that applies them to both.
// ---------------------------------------------------------------------------

type LoadedSeed = { tag: "value"; seed: number } | { tag: "unavailable" } | { tag: "absent" };
type InitialSource = { key: Key; kind: Kind; loaded: LoadedSeed; removable: boolean; async: boolean };

type Command =
  | { op: "set value"; key: Key; seed: number }
  | { op: "make unavailable"; key: Key }
  | { op: "make absent"; key: Key }
  | { op: "add source"; key: Key; kind: Kind; seed: number; removable: boolean; async: boolean }
  | { op: "remove source"; key: Key }
  | { op: "change schema"; key: Key; kind: Kind; seed: number }
  | { op: "drop removal renderer"; key: Key }
  | { op: "restore removal renderer"; key: Key }
  | { op: "store snapshot as JSON" }
  | { op: "boundary" }
  | { op: "compact" };

const keyArb = fc.constantFrom(...keys);
const kindArb = fc.constantFrom(...kinds);
const seedArb = fc.nat(15);
const removableArb = fc.nat(3).map((n) => n > 0);
const loadedArb: fc.Arbitrary<LoadedSeed> = fc.oneof(
  { weight: 10, arbitrary: seedArb.map((seed) => ({ tag: "value" as const, seed })) },
  { weight: 1, arbitrary: fc.constant({ tag: "unavailable" as const }) },
  { weight: 1, arbitrary: fc.constant({ tag: "absent" as const }) },
);
const initialArb: fc.Arbitrary<InitialSource[]> = fc.uniqueArray(
  fc.record({ key: keyArb, kind: kindArb, loaded: loadedArb, removable: removableArb, async: fc.boolean() }),
  { selector: (s) => s.key, maxLength: keys.length },
);
const commandArb: fc.Arbitrary<Command> = fc.oneof(
  { weight: 6, arbitrary: fc.constant({ op: "boundary" as const }) },
  { weight: 5, arbitrary: fc.record({ op: fc.constant("set value" as const), key: keyArb, seed: seedArb }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant("make unavailable" as const), key: keyArb }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant("make absent" as const), key: keyArb }) },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant("add source" as const),
      key: keyArb,
      kind: kindArb,
      seed: seedArb,
      removable: removableArb,
      async: fc.boolean(),
    }),
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constant("remove source" as const), key: keyArb }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant("change schema" as const), key: keyArb, kind: kindArb, seed: seedArb }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("drop removal renderer" as const), key: keyArb }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("restore removal renderer" as const), key: keyArb }) },
  { weight: 2, arbitrary: fc.constant({ op: "store snapshot as JSON" as const }) },
  { weight: 1, arbitrary: fc.constant({ op: "compact" as const }) },
);

function loadedOf(kind: Kind, seed: LoadedSeed): Loaded {
  return seed.tag === "value" ? { tag: "value", value: sample(kind, seed.seed) } : seed;
}

/** How often each outcome was seen across all runs, to prove the runs reach every branch. */
const seen = new Map<string, number>();
const tally = (what: string) => seen.set(what, (seen.get(what) ?? 0) + 1);

/** The host's durable state: the active snapshot, kept alongside the model's. */
interface Host {
  snapshot: SystemContext.Snapshot | undefined;
  expected: ModelSnapshot | undefined;
}

/** Runs one operation of the implementation and checks rule 1: every source observed once, concurrently. */
async function observing<T>(world: World, operation: () => Promise<T>): Promise<T> {
  world.loads.clear();
  world.maxPending = 0;
  const result = await operation();
  expect([...world.loads.keys()].sort(), "sources observed").to.deep.equal([...world.order].sort());
  for (const [key, count] of world.loads) expect(count, `observations of ${key}`).to.equal(1);
  const asyncSources = world.order.filter((key) => world.state(key).async).length;
  expect(world.maxPending, "asynchronous loads in flight together").to.equal(asyncSources);
  return result;
}

/** Snapshots agree deeply, and each entry byte for byte (encoded value and stored removal text). */
function expectSameSnapshot(actual: SystemContext.Snapshot, expected: ModelSnapshot) {
  expect(actual).to.deep.equal(expected);
  for (const key of Object.keys(expected)) {
    expect(JSON.stringify(actual[key]), `entry ${key}`).to.equal(JSON.stringify(expected[key]));
  }
}

async function boundary(world: World, host: Host) {
  const context = world.context();
  if (host.snapshot === undefined || host.expected === undefined) {
    // First provider turn: the host initializes, and retries at the next boundary when blocked.
    const expected = modelInitialize(world);
    const actual = await observing(world, () =>
      SystemContext.initialize(context).then(
        (generation) => ({ generation }),
        (error: unknown) => ({ error }),
      ),
    );
    if ("blocked" in expected) {
      tally("initialization blocked");
      expect(actual).to.have.property("error").that.is.instanceOf(SystemContext.InitializationBlocked);
      expect((actual as { error: InstanceType<typeof SystemContext.InitializationBlocked> }).error.keys).to.deep.equal(
        expected.blocked,
      );
      return;
    }
    tally("initialized");
    if ("error" in actual) throw actual.error;
    expect(actual.generation).to.deep.equal(expected.generation);
    expectSameSnapshot(actual.generation.snapshot, expected.generation.snapshot);
    const { snapshot } = actual.generation;
    host.snapshot = snapshot;
    host.expected = expected.generation.snapshot;
    const next = await observing(world, () => SystemContext.reconcile(context, snapshot));
    expect(next, "reconciling right after initialization").to.deep.equal({ kind: "unchanged" });
    return;
  }

  const { result: expected, escalation } = modelReconcile(world, host.expected);
  const active = host.snapshot;
  const actual = await observing(world, () => SystemContext.reconcile(context, active));
  tally(escalation === undefined ? `reconcile ${expected.kind}` : `reconcile ${expected.kind} (${escalation})`);
  expect(actual.kind).to.equal(expected.kind);
  if (actual.kind === "updated" && expected.kind === "updated") {
    expect(actual.text).to.equal(expected.text);
    expectSameSnapshot(actual.snapshot, expected.snapshot);
    host.snapshot = actual.snapshot;
    host.expected = expected.snapshot;
  } else if (actual.kind === "replaced" && expected.kind === "replaced") {
    expect(actual.generation.baseline).to.equal(expected.generation.baseline);
    expectSameSnapshot(actual.generation.snapshot, expected.generation.snapshot);
    host.snapshot = actual.generation.snapshot;
    host.expected = expected.generation.snapshot;
  }
  expect(actual).to.deep.equal(expected);

  const now = host.snapshot;
  const again = await observing(world, () => SystemContext.reconcile(context, now));
  if (actual.kind === "replacement-blocked") {
    expect(again).to.deep.equal(modelReconcile(world, host.expected).result);
  } else {
    expect(again, "reconciling again with no change").to.deep.equal({ kind: "unchanged" });
  }
}

async function compact(world: World, host: Host) {
  const active = host.snapshot;
  if (active === undefined || host.expected === undefined) return;
  const expected = modelReplace(world, host.expected);
  const actual = await observing(world, () => SystemContext.replace(world.context(), active));
  tally(`compact ${expected.kind}`);
  expect(actual).to.deep.equal(expected);
  if (actual.kind === "replaced" && expected.kind === "replaced") {
    expectSameSnapshot(actual.generation.snapshot, expected.generation.snapshot);
    host.snapshot = actual.generation.snapshot;
    host.expected = expected.generation.snapshot;
  }
}

async function apply(world: World, host: Host, command: Command) {
  switch (command.op) {
    case "boundary":
      return boundary(world, host);
    case "compact":
      return compact(world, host);
    case "store snapshot as JSON":
      if (host.snapshot === undefined) return;
      host.snapshot = SystemContext.parseSnapshot(JSON.parse(JSON.stringify(host.snapshot)));
      expect(host.snapshot).to.deep.equal(host.expected);
      return;
    case "add source":
      if (world.sources.has(command.key)) return;
      world.order.push(command.key);
      world.sources.set(command.key, {
        kind: command.kind,
        loaded: { tag: "value", value: sample(command.kind, command.seed) },
        removable: command.removable,
        async: command.async,
      });
      return;
    case "remove source":
      if (!world.sources.has(command.key)) return;
      world.sources.delete(command.key);
      world.order = world.order.filter((key) => key !== command.key);
      return;
  }
  const state = world.sources.get(command.key);
  if (state === undefined) return;
  switch (command.op) {
    case "set value":
      state.loaded = { tag: "value", value: sample(state.kind, command.seed) };
      return;
    case "make unavailable":
      state.loaded = { tag: "unavailable" };
      return;
    case "make absent":
      state.loaded = { tag: "absent" };
      return;
    case "change schema": {
      const kind = command.kind === state.kind ? (kinds[(kinds.indexOf(state.kind) + 1) % kinds.length] as Kind) : command.kind;
      state.kind = kind;
      state.loaded = { tag: "value", value: sample(kind, command.seed) };
      return;
    }
    case "drop removal renderer":
      state.removable = false;
      return;
    case "restore removal renderer":
      state.removable = true;
      return;
  }
}

describe("SystemContext: a host and a reference model of SPEC section 2 agree", () => {
  it("at every boundary of a random session, reconcile decides what the specification decides", async () => {
    seen.clear();
    await fc.assert(
      fc.asyncProperty(initialArb, fc.array(commandArb, { maxLength: 40, size: "medium" }), async (initial, commands) => {
        const world = new World();
        for (const s of initial) {
          world.order.push(s.key);
          world.sources.set(s.key, { kind: s.kind, loaded: loadedOf(s.kind, s.loaded), removable: s.removable, async: s.async });
        }
        const host: Host = { snapshot: undefined, expected: undefined };
        await boundary(world, host);
        for (const command of commands) await apply(world, host, command);
        await boundary(world, host);
      }),
      { numRuns },
    );
    if (process.env.CONTEXT_HOST_STATS) console.log(Object.fromEntries([...seen].sort()));
    expect([...seen.keys()], "outcomes reached").to.include.members([
      "initialization blocked",
      "initialized",
      "reconcile unchanged",
      "reconcile updated",
      "reconcile replaced (undecodable)",
      "reconcile replaced (no removal text)",
      "reconcile replacement-blocked (undecodable)",
      "reconcile replacement-blocked (no removal text)",
      "compact replaced",
      "compact replacement-blocked",
    ]);
  }).timeout(numRuns * 20);
});
