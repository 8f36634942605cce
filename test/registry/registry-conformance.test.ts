// The registry against the published registry conformance suite, and the suite against a
// registry that breaks a rule (it must fail that rule).

import { expect } from "chai";
import { describeRegistryConformance, type RegistryUnderTest } from "../../core/conformance/registry-suite.ts";
import { Registry } from "../../core/registry/registry.ts";
import { collectSuite } from "../support/suite-cases.ts";

describeRegistryConformance("Registry", () => new Registry());

describe("registry conformance: the suite catches a registry that breaks a rule", () => {
  it("a registry that composes plugin sources in registration order fails the order rule only", async () => {
    const suite = collectSuite();
    // Registration order instead of key order: sort is skipped by re-registering in a fresh registry per call.
    const unsorted = (): RegistryUnderTest => {
      const inner = new Registry();
      const order: string[] = [];
      return {
        register: (scope, registration) => {
          order.push(registration.key);
          inner.register(scope, registration);
        },
        unregister: (registration) => inner.unregister(registration),
        batch: (changes) => inner.batch(changes),
        subscribe: (listener) => inner.subscribe(listener),
        compose: (env, state) => inner.compose(env, state),
        get state() {
          const state = inner.state;
          const rank = (key: string) => (key.startsWith("core/") ? -1 : order.indexOf(key));
          return { ...state, registrations: [...state.registrations].sort((a, b) => rank(a.key) - rank(b.key)) };
        },
      };
    };
    describeRegistryConformance("unsorted", unsorted, suite.runner);
    const failed = await suite.failed();
    expect(failed).to.deep.equal([
      "core registrations compose in host order, then plugin ones by key, whatever the registration order",
    ]);
  });

  it("a registry whose scope's registrations leave one version each fails the one-version-per-closed-scope rule only", async () => {
    const suite = collectSuite();
    // Closing the scope unregisters each registration separately: one version per registration.
    const oneByOne = (): RegistryUnderTest => {
      const inner = new Registry();
      return {
        register: (scope, registration) => {
          inner.register(scope, registration);
          void scope.add(() => inner.unregister(registration));
        },
        unregister: (registration) => inner.unregister(registration),
        batch: (changes) => inner.batch(changes),
        subscribe: (listener) => inner.subscribe(listener),
        compose: (env, state) => inner.compose(env, state),
        get state() {
          return inner.state;
        },
      };
    };
    describeRegistryConformance("one by one", oneByOne, suite.runner);
    const failed = await suite.failed();
    expect(failed).to.deep.equal(["closing a scope removes all its registrations in one version"]);
  });
});
