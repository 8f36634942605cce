// Owns `describeRegistryConformance`: the registry rules of SPEC section 3 as test cases
// for any registry implementation — scope identity, order independence, replay, one
// version per batch and per closed scope, disposal order — using only the registry's
// public shape.

import Type from "typebox";
import { Scope } from "../base/scope.ts";
import type { Registration, Registry, RegistryState } from "../registry/registry.ts";
import { DuplicateKeyError, initialize, make } from "../system-context/index.ts";
import type { TestRunner } from "./plugin-suite.ts";

/** What a registry must offer to be checked: the public surface of `Registry`. */
export type RegistryUnderTest = Pick<Registry, "register" | "unregister" | "batch" | "state" | "subscribe" | "compose">;

const env = { location: "/work/project" };

function registration(key: string, origin: "core" | "plugin", text = "on"): Registration {
  const context = make({
    key,
    schema: Type.String(),
    load: () => text,
    baseline: (value) => `${key} = ${value}`,
    update: (_previous, value) => `${key} is now ${value}`,
  });
  return { key, origin, load: () => context };
}

const keysOf = (state: RegistryState) => state.registrations.map((r) => r.key);

async function composed(registry: RegistryUnderTest): Promise<string> {
  return (await initialize(await registry.compose(env))).baseline;
}

function check(condition: boolean, message: string): void {
  if (!condition) throw new Error(message);
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** Declares one test case per registry rule, each on a fresh registry from `create`. */
export function describeRegistryConformance(name: string, create: () => RegistryUnderTest, runner?: TestRunner): void {
  const { describe, it } = runner ?? (globalThis as unknown as TestRunner);
  describe(`registry conformance: ${name}`, () => {
    it("closing a scope removes exactly the registrations made in it", async () => {
      const registry = create();
      const [a, b] = [new Scope("a"), new Scope("b")];
      registry.register(a, registration("p/one", "plugin"));
      registry.register(b, registration("p/two", "plugin"));
      await a.close();
      check(same(keysOf(registry.state), ["p/two"]), `after closing scope a: ${keysOf(registry.state)}`);
    });

    it("closing generation N never removes generation N+1's registration under the same key", async () => {
      const registry = create();
      const n = new Scope("n");
      const old = registration("p/key", "plugin", "old");
      registry.register(n, old);
      const next = registration("p/key", "plugin", "new");
      registry.batch((batch) => {
        batch.unregister(old);
        batch.register(new Scope("n+1"), next);
      });
      await n.close();
      check((await composed(registry)) === "p/key = new", "generation N's scope removed generation N+1's registration");
    });

    it("closing a scope removes all its registrations in one version", async () => {
      const registry = create();
      const [host, other] = [new Scope("host"), new Scope("other")];
      registry.register(host, registration("core/a", "core"));
      registry.register(host, registration("p/one", "plugin"));
      registry.register(other, registration("p/two", "plugin"));
      registry.register(host, registration("p/three", "plugin"));
      const heard: string[] = [];
      registry.subscribe((state) => heard.push(keysOf(state).join(",")));
      await host.close();
      check(
        same(heard, ["core/a,p/one,p/three,p/two", "p/two"]),
        `closing the scope published ${JSON.stringify(heard.slice(1))}`,
      );
    });

    it("a scope retired in a batch publishes nothing more when it is closed", async () => {
      const registry = create();
      const n = new Scope("n");
      registry.register(n, registration("p/a", "plugin", "old"));
      registry.register(n, registration("p/b", "plugin", "old"));
      registry.batch((batch) => {
        batch.retire(n);
        batch.register(new Scope("n+1"), registration("p/a", "plugin", "new"));
      });
      const versions: number[] = [];
      registry.subscribe((state) => versions.push(state.version));
      await n.close();
      check(versions.length === 1, `closing the retired scope published ${versions.length - 1} versions`);
      check((await composed(registry)) === "p/a = new", "closing the retired scope changed the composition");
    });

    it("core registrations compose in host order, then plugin ones by key, whatever the registration order", async () => {
      const orders = [
        ["p/b", "core/z", "p/a", "core/y"],
        ["p/a", "p/b", "core/y", "core/z"],
      ];
      const results: string[] = [];
      for (const order of orders) {
        const registry = create();
        const scope = new Scope();
        for (const key of order) registry.register(scope, registration(key, key.startsWith("core/") ? "core" : "plugin"));
        results.push(keysOf(registry.state).join(","));
      }
      // Core sources in the order the host registered them; plugin sources by key.
      check(results[0] === "core/z,core/y,p/a,p/b", `registered ${orders[0]}, composed ${results[0]}`);
      check(results[1] === "core/y,core/z,p/a,p/b", `registered ${orders[1]}, composed ${results[1]}`);
    });

    it("a subscriber gets the current state at once, then each version once, in order; a late one gets only the current", () => {
      const registry = create();
      const seen: string[] = [];
      registry.subscribe((state) => seen.push(keysOf(state).join(",")));
      registry.register(new Scope(), registration("p/a", "plugin"));
      registry.register(new Scope(), registration("p/b", "plugin"));
      check(same(seen, ["", "p/a", "p/a,p/b"]), `heard ${JSON.stringify(seen)}`);
      const late: string[] = [];
      registry.subscribe((state) => late.push(keysOf(state).join(",")));
      check(same(late, ["p/a,p/b"]), `late subscriber heard ${JSON.stringify(late)}`);
    });

    it("a batch is one version, and a batch with a duplicate key applies nothing", () => {
      const registry = create();
      const scope = new Scope();
      const versions: number[] = [];
      registry.subscribe((state) => versions.push(state.version));
      registry.batch((batch) => {
        batch.register(scope, registration("p/a", "plugin"));
        batch.register(scope, registration("p/b", "plugin"));
      });
      check(versions.length === 2, `a two-registration batch published ${versions.length - 1} versions`);
      let threw: unknown;
      try {
        registry.batch((batch) => {
          batch.register(scope, registration("p/c", "plugin"));
          batch.register(scope, registration("p/a", "plugin"));
        });
      } catch (error) {
        threw = error;
      }
      check(threw instanceof DuplicateKeyError, `a duplicate key threw ${String(threw)}`);
      check(same(keysOf(registry.state), ["p/a", "p/b"]), `after the refused batch: ${keysOf(registry.state)}`);
    });

    it("a boundary composes the version it read, even after later changes", async () => {
      const registry = create();
      registry.register(new Scope(), registration("p/a", "plugin"));
      const read = registry.state;
      registry.register(new Scope(), registration("p/b", "plugin"));
      const baseline = (await initialize(await registry.compose(env, read))).baseline;
      check(baseline === "p/a = on", `composed ${JSON.stringify(baseline)}`);
    });

    it("registering in a closed scope is refused and changes nothing", async () => {
      const registry = create();
      const scope = new Scope();
      await scope.close();
      let threw = false;
      try {
        registry.register(scope, registration("p/a", "plugin"));
      } catch {
        threw = true;
      }
      check(threw && keysOf(registry.state).length === 0, "a closed scope's registration was accepted");
    });
  });
}
