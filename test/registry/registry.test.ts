// The registry rules of SPEC section 3: scoped registrations removed by identity,
// composition order that depends only on the set of active registrations, and
// replayable, whole-version subscription.

import { expect } from "chai";
import fc from "fast-check";
import Type from "typebox";
import { Scope } from "../../core/base/scope.ts";
import { type Registration, Registry, type RegistryState } from "../../core/registry/registry.ts";
import * as SystemContext from "../../core/system-context.ts";

const env = { location: "/work/project" };

/** A registration whose source renders `key = text`. */
function registration(key: string, origin: "core" | "plugin", text = "on"): Registration {
  const context = SystemContext.make({
    key,
    schema: Type.String(),
    load: () => text,
    baseline: (value) => `${key} = ${value}`,
    update: (_previous, value) => `${key} is now ${value}`,
  });
  return { key, origin, load: () => context };
}

const keysOf = (state: RegistryState) => state.registrations.map((r) => r.key);

/** The keys of a composed System Context, in composition order, read from its Baseline. */
async function composedKeys(registry: Registry): Promise<string[]> {
  const generation = await SystemContext.initialize(await registry.compose(env));
  return generation.baseline === "" ? [] : generation.baseline.split("\n\n").map((text) => text.split(" = ")[0] as string);
}

describe("Registry: scoped registrations", () => {
  it("closing the scope removes the registration made inside it", async () => {
    const registry = new Registry();
    const scope = new Scope();
    registry.register(scope, registration("weather/today", "plugin"));
    expect(keysOf(registry.state)).to.deep.equal(["weather/today"]);
    await scope.close();
    expect(keysOf(registry.state)).to.deep.equal([]);
  });

  it("closing generation N never removes generation N+1's registration under the same key", async () => {
    const registry = new Registry();
    const generationN = new Scope("generation N");
    const old = registration("weather/today", "plugin", "rain");
    registry.register(generationN, old);
    const generationNext = new Scope("generation N+1");
    const next = registration("weather/today", "plugin", "sun");
    registry.batch((batch) => {
      batch.unregister(old);
      batch.register(generationNext, next);
    });
    await generationN.close();
    expect(registry.state.registrations).to.deep.equal([next]);
    expect((await SystemContext.initialize(await registry.compose(env))).baseline).to.equal("weather/today = sun");
  });

  it("only the closed scope's registrations leave; other scopes' stay", async () => {
    const registry = new Registry();
    const weather = new Scope();
    const git = new Scope();
    registry.register(weather, registration("weather/today", "plugin"));
    registry.register(weather, registration("weather/tomorrow", "plugin"));
    registry.register(git, registration("git/branch", "plugin"));
    await weather.close();
    expect(keysOf(registry.state)).to.deep.equal(["git/branch"]);
  });

  it("closing a scope that holds N registrations publishes exactly one version", async () => {
    const registry = new Registry();
    const host = new Scope("host");
    const other = new Scope("other");
    registry.batch((batch) => {
      for (const key of ["core/date", "core/environment", "instructions/files"]) batch.register(host, registration(key, "core"));
    });
    registry.register(host, registration("weather/today", "plugin"));
    registry.register(other, registration("git/branch", "plugin"));
    const seen: string[][] = [];
    registry.subscribe((state) => seen.push(keysOf(state)));
    const before = registry.state.version;
    await host.close();
    expect(registry.state.version).to.equal(before + 1);
    expect(seen).to.deep.equal([
      ["core/date", "core/environment", "instructions/files", "git/branch", "weather/today"],
      ["git/branch"],
    ]);
  });

  it("a scope retired in a batch publishes nothing more when it is closed", async () => {
    const registry = new Registry();
    const generationN = new Scope("generation N");
    registry.register(generationN, registration("weather/today", "plugin", "rain"));
    registry.register(generationN, registration("weather/tomorrow", "plugin", "rain"));
    const generationNext = new Scope("generation N+1");
    const next = registration("weather/today", "plugin", "sun");
    registry.batch((batch) => {
      batch.retire(generationN);
      batch.register(generationNext, next);
    });
    expect(registry.state.registrations).to.deep.equal([next]);
    const version = registry.state.version;
    const seen: number[] = [];
    registry.subscribe((state) => seen.push(state.version));
    await generationN.close();
    expect(registry.state.version).to.equal(version);
    expect(seen).to.deep.equal([version]);
    expect(registry.state.registrations).to.deep.equal([next]);
  });

  it("batch.retire removes what the scope registered in the same batch too, and closing it later publishes nothing", async () => {
    const registry = new Registry();
    const scope = new Scope("generation");
    registry.batch((batch) => {
      batch.register(scope, registration("weather/today", "plugin"));
      batch.retire(scope);
    });
    expect(registry.state.version).to.equal(0);
    await scope.close();
    expect(registry.state.version).to.equal(0);
  });

  it("registering in a closed scope is refused and changes nothing", async () => {
    const registry = new Registry();
    const scope = new Scope();
    await scope.close();
    expect(() => registry.register(scope, registration("weather/today", "plugin"))).to.throw(/closed scope/);
    expect(registry.state.version).to.equal(0);
  });

  it("unregistering a registration that is not active does nothing and publishes no version", () => {
    const registry = new Registry();
    registry.register(new Scope(), registration("weather/today", "plugin"));
    const before = registry.state;
    registry.unregister(registration("weather/today", "plugin"));
    expect(registry.state).to.equal(before);
  });
});

describe("Registry: composition order", () => {
  it("composes core registrations in host order, then plugin sources in lexicographic key order", async () => {
    const registry = new Registry();
    const scope = new Scope();
    for (const [key, origin] of [
      ["zeta/last", "plugin"],
      ["core/environment", "core"],
      ["ab/x", "plugin"],
      ["a/x", "plugin"],
      ["core/date", "core"],
      ["a.b/x", "plugin"],
      ["a-b/x", "plugin"],
      ["a0/x", "plugin"],
    ] as const) {
      registry.register(scope, registration(key, origin));
    }
    // UTF-16 code units: "-" (45) < "." (46) < "/" (47) < "0" (48) < "b" (98).
    expect(await composedKeys(registry)).to.deep.equal([
      "core/environment",
      "core/date",
      "a-b/x",
      "a.b/x",
      "a/x",
      "a0/x",
      "ab/x",
      "zeta/last",
    ]);
  });

  it("the composed order depends only on the set of active registrations, never on load or reload order", async () => {
    const key = fc
      .tuple(fc.stringMatching(/^[a-c0-9][a-c0-9._-]{0,2}$/), fc.stringMatching(/^[a-c0-9][a-c0-9._/-]{0,3}$/))
      .map(([namespace, name]) => `${namespace}/${name}`);
    const keys = fc.uniqueArray(key, { minLength: 1, maxLength: 12 });
    /** One history of loads: plugins load in a shuffled order among the core registrations, some reload, some unload and return. */
    const history = fc.record({
      order: fc.array(fc.double({ noNaN: true }), { minLength: 12, maxLength: 12 }),
      coreSlots: fc.array(fc.nat(12), { minLength: 12, maxLength: 12 }),
      reloads: fc.array(fc.nat(11), { maxLength: 8 }),
      returns: fc.array(fc.nat(11), { maxLength: 4 }),
    });

    type History = typeof history extends fc.Arbitrary<infer H> ? H : never;

    async function replay(core: readonly string[], plugins: readonly string[], h: History): Promise<string[]> {
      const registry = new Registry();
      const shuffled = plugins.map((k, i) => ({ k, at: h.order[i] ?? 0 })).sort((a, b) => a.at - b.at);
      // Interleave core registrations (kept in host order) among the plugin loads.
      const steps: Array<{ origin: "core" | "plugin"; key: string }> = shuffled.map(({ k }) => ({ origin: "plugin", key: k }));
      core.forEach((k, i) => {
        const slot = Math.min(h.coreSlots[i] ?? 0, steps.length);
        const after = steps.findLastIndex((s) => s.origin === "core");
        steps.splice(Math.max(slot, after + 1), 0, { origin: "core", key: k });
      });
      const active = new Map<string, { scope: Scope; registration: Registration }>();
      for (const step of steps) {
        const scope = new Scope();
        const made = registration(step.key, step.origin);
        registry.register(scope, made);
        active.set(step.key, { scope, registration: made });
      }
      for (const index of h.reloads) {
        const k = plugins[index % plugins.length] as string;
        const old = active.get(k);
        if (old === undefined) continue;
        const scope = new Scope();
        const next = registration(k, "plugin");
        registry.batch((batch) => {
          batch.unregister(old.registration);
          batch.register(scope, next);
        });
        await old.scope.close();
        active.set(k, { scope, registration: next });
      }
      for (const index of h.returns) {
        const k = plugins[index % plugins.length] as string;
        await active.get(k)?.scope.close();
        const scope = new Scope();
        const back = registration(k, "plugin");
        registry.register(scope, back);
        active.set(k, { scope, registration: back });
      }
      return composedKeys(registry);
    }

    await fc.assert(
      fc.asyncProperty(
        keys,
        fc.array(key, { maxLength: 4 }),
        history,
        history,
        async (pluginKeys, coreCandidates, first, second) => {
          const core = [...new Set(coreCandidates)].filter((k) => !pluginKeys.includes(k));
          const expected = [...core, ...[...pluginKeys].sort()];
          expect(await replay(core, pluginKeys, first)).to.deep.equal(expected);
          expect(await replay(core, pluginKeys, second)).to.deep.equal(expected);
        },
      ),
      { numRuns: 150 },
    );
  });
});

describe("Registry: versions and subscribers", () => {
  it("subscribe delivers the current state at once, then every change in order", async () => {
    const registry = new Registry();
    const scope = new Scope();
    registry.register(scope, registration("core/date", "core"));
    const seen: Array<{ version: number; keys: string[] }> = [];
    registry.subscribe((state) => seen.push({ version: state.version, keys: keysOf(state) }));
    expect(seen).to.deep.equal([{ version: 1, keys: ["core/date"] }]);
    const weather = new Scope();
    registry.register(weather, registration("weather/today", "plugin"));
    registry.register(weather, registration("git/branch", "plugin"));
    await weather.close();
    expect(seen).to.deep.equal([
      { version: 1, keys: ["core/date"] },
      { version: 2, keys: ["core/date", "weather/today"] },
      { version: 3, keys: ["core/date", "git/branch", "weather/today"] },
      // Closing a scope removes all it holds in one version.
      { version: 4, keys: ["core/date"] },
    ]);
  });

  it("a late subscriber is replayed the current state, not the history", () => {
    const registry = new Registry();
    registry.register(new Scope(), registration("a/x", "plugin"));
    registry.register(new Scope(), registration("b/x", "plugin"));
    const seen: RegistryState[] = [];
    registry.subscribe((state) => seen.push(state));
    expect(seen).to.have.length(1);
    expect(seen[0]).to.equal(registry.state);
    expect(keysOf(seen[0] as RegistryState)).to.deep.equal(["a/x", "b/x"]);
  });

  it("an unsubscribed listener hears nothing more", () => {
    const registry = new Registry();
    const seen: number[] = [];
    const unsubscribe = registry.subscribe((state) => seen.push(state.version));
    unsubscribe();
    registry.register(new Scope(), registration("a/x", "plugin"));
    expect(seen).to.deep.equal([0]);
  });

  it("a subscriber that throws does not stop registration or other subscribers", () => {
    const registry = new Registry();
    const seen: number[] = [];
    registry.subscribe(() => {
      throw new Error("listener bug");
    });
    registry.subscribe((state) => seen.push(state.version));
    registry.register(new Scope(), registration("a/x", "plugin"));
    expect(seen).to.deep.equal([0, 1]);
    expect(keysOf(registry.state)).to.deep.equal(["a/x"]);
  });

  it("a batch is one version: a subscriber never sees half of a generation swap", async () => {
    const registry = new Registry();
    const old = new Scope();
    const oldSources = ["weather/today", "weather/tomorrow"].map((k) => registration(k, "plugin", "old"));
    registry.batch((batch) => {
      for (const r of oldSources) batch.register(old, r);
    });
    const seen: RegistryState[] = [];
    registry.subscribe((state) => seen.push(state));
    const next = new Scope();
    const nextSources = ["weather/today", "weather/tomorrow", "weather/week"].map((k) => registration(k, "plugin", "new"));
    registry.batch((batch) => {
      for (const r of oldSources) batch.unregister(r);
      for (const r of nextSources) batch.register(next, r);
    });
    await old.close();
    expect(seen.map((s) => s.version)).to.deep.equal([1, 2]);
    expect(seen[0]?.registrations).to.deep.equal(oldSources);
    expect(seen[1]?.registrations).to.deep.equal(nextSources);
  });

  it("a boundary composes the version it read, even after later changes", async () => {
    const registry = new Registry();
    const scope = new Scope();
    registry.register(scope, registration("weather/today", "plugin", "rain"));
    const read = registry.state;
    registry.register(new Scope(), registration("git/branch", "plugin"));
    await scope.close();
    const generation = await SystemContext.initialize(await registry.compose(env, read));
    expect(generation.baseline).to.equal("weather/today = rain");
  });

  it("a duplicate key rejects the whole batch with DuplicateKeyError and applies nothing", async () => {
    const registry = new Registry();
    registry.register(new Scope(), registration("weather/today", "plugin"));
    const before = registry.state;
    const seen: number[] = [];
    registry.subscribe((state) => seen.push(state.version));
    const scope = new Scope();
    let error: unknown;
    try {
      registry.batch((batch) => {
        batch.register(scope, registration("git/branch", "plugin"));
        batch.register(scope, registration("weather/today", "plugin"));
      });
    } catch (e) {
      error = e;
    }
    expect(error).to.be.instanceOf(SystemContext.DuplicateKeyError);
    expect((error as InstanceType<typeof SystemContext.DuplicateKeyError>).key).to.equal("weather/today");
    expect(registry.state).to.equal(before);
    expect(seen).to.deep.equal([before.version]);
    // Nothing of the failed batch was tied to its scope.
    await scope.close();
    expect(registry.state).to.equal(before);
  });

  it("a core and a plugin registration under one key are a duplicate too", () => {
    const registry = new Registry();
    registry.register(new Scope(), registration("core/date", "core"));
    expect(() => registry.register(new Scope(), registration("core/date", "plugin"))).to.throw(SystemContext.DuplicateKeyError);
    expect(keysOf(registry.state)).to.deep.equal(["core/date"]);
  });

  it("batches do not nest", () => {
    const registry = new Registry();
    expect(() => registry.batch(() => registry.register(new Scope(), registration("a/x", "plugin")))).to.throw(/do not nest/);
    expect(registry.state.version).to.equal(0);
  });
});

describe("Registry: composing a version", () => {
  it("composes the same System Context while every source loads the same context, and anew when one loads another", async () => {
    const registry = new Registry();
    const scope = new Scope();
    const contexts = ["a/one", "b/two"].map((key) =>
      SystemContext.make({
        key,
        schema: Type.String(),
        load: () => key,
        baseline: (value) => `${key} = ${value}`,
        update: (_previous, value) => `${key} is now ${value}`,
      }),
    );
    let second = contexts[1] as SystemContext.SystemContext;
    let loads = 0;
    registry.register(scope, { key: "a/one", origin: "core", load: () => contexts[0] as SystemContext.SystemContext });
    registry.register(scope, {
      key: "b/two",
      origin: "core",
      load: () => {
        loads += 1;
        return second;
      },
    });
    const first = await registry.compose(env);
    expect(await registry.compose(env), "the same contexts").to.equal(first);
    expect(loads, "every composition loads every source").to.equal(2);
    second = SystemContext.make({
      key: "b/two",
      schema: Type.String(),
      load: () => "2",
      baseline: (value) => `b/two = ${value}`,
      update: (_previous, value) => `b/two is now ${value}`,
    });
    const changed = await registry.compose(env);
    expect(changed).to.not.equal(first);
    expect((await SystemContext.initialize(changed)).baseline).to.equal("a/one = a/one\n\nb/two = 2");
  });

  it("composes sources that load asynchronously, in registration order, with the same result as synchronous ones", async () => {
    const registry = new Registry();
    const scope = new Scope();
    const one = registration("a/one", "core");
    const two = registration("b/two", "core");
    registry.register(scope, { ...one, load: async (where) => one.load(where) });
    registry.register(scope, two);
    const generation = await SystemContext.initialize(await registry.compose(env));
    expect(generation.baseline).to.equal("a/one = on\n\nb/two = on");
    const again = await SystemContext.initialize(await registry.compose(env));
    expect(again.baseline, "composed again the same").to.equal(generation.baseline);
  });
});
