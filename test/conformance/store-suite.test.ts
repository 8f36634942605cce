// describeStoreConformance can fail: run through a recording runner against SQLite (in
// memory) with one method broken at a time, it fails the rule that method breaks — and
// passes every rule against the store as it is.

import { expect } from "chai";
import { ConformanceSetupInvalid, describeStoreConformance } from "../../core/conformance.ts";
import { SqliteSessionStore } from "../../core/session/store/sqlite.ts";
import type { SessionStore } from "../../core/session/store/store.ts";
import { collectSuite } from "../support/suite-cases.ts";

type Break = (store: SessionStore) => Partial<SessionStore>;

/** The store with some methods replaced; the rest are the store's own. */
function broken(store: SessionStore, replace: Break): SessionStore {
  const replaced = replace(store);
  return new Proxy(store, {
    get(target, property, receiver) {
      if (Object.hasOwn(replaced, property)) return replaced[property as keyof SessionStore];
      const value = Reflect.get(target, property, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** Runs the suite on the (broken) store; resolves with the titles of the rules that failed and the number of rules. */
async function run(replace: Break): Promise<{ failed: string[]; rules: number }> {
  const suite = collectSuite();
  describeStoreConformance(
    "under test",
    async () => {
      const store = new SqliteSessionStore(":memory:");
      return { store: broken(store, replace), close: () => store.close() };
    },
    { isDurable: false, runner: suite.runner },
  );
  const failed = await suite.failed();
  return { failed, rules: suite.cases.size };
}

describe("describeStoreConformance with a runner of its own", () => {
  it("passes every rule against SQLite as it is", async () => {
    const { failed, rules } = await run(() => ({}));
    expect(rules).to.be.greaterThan(20);
    expect(failed).to.deep.equal([]);
  });

  const breaks: Array<[string, Break, RegExp]> = [
    [
      "pending prompts listed newest first",
      (store) => ({ pendingPrompts: async (id) => (await store.pendingPrompts(id)).reverse() }),
      /^pending prompts are listed in the order they were added/,
    ],
    [
      "a lease granted to anyone, always",
      () => ({ claimLease: async () => true }),
      /claimLease succeeds only while a reply is awaited/,
    ],
    ["history read from the start whatever was already read", (store) => ({ messages: async (id) => store.messages(id) }), /./],
  ];
  for (const [what, replace, rule] of breaks) {
    it(`fails the rule ${what} breaks`, async () => {
      const { failed } = await run(replace);
      expect(failed, `failed: ${JSON.stringify(failed)}`).to.not.be.empty;
      expect(
        failed.some((title) => rule.test(title)),
        `failed: ${JSON.stringify(failed)}`,
      ).to.equal(true);
    });
  }

  it("a durable store's fixture without reopen fails the durability rule with ConformanceSetupInvalid naming the suite", async () => {
    const cases = new Map<string, () => Promise<void> | void>();
    describeStoreConformance(
      "no reopen",
      async () => {
        const store = new SqliteSessionStore(":memory:");
        return { store, close: () => store.close() };
      },
      { runner: { describe: (_title, body) => body(), it: (title, body) => cases.set(title, body) } },
    );
    const durability = [...cases].find(([title]) => title.startsWith("everything committed survives"));
    expect(durability, "the durability rule").to.not.equal(undefined);
    const error = await Promise.resolve()
      .then(durability?.[1])
      .catch((caught: unknown) => caught);
    expect(error).to.be.instanceOf(ConformanceSetupInvalid);
    expect(error).to.include({ name: "ConformanceSetupInvalid", suite: 'describeStoreConformance("no reopen")' });
    expect((error as Error).message).to.match(
      /^describeStoreConformance\("no reopen"\): a durable store's fixture must give `reopen`/,
    );
  });

  it("without mocha's globals or a runner, declaring the suite throws ConformanceSetupInvalid", () => {
    const globals = globalThis as { it?: unknown };
    const savedIt = globals.it;
    try {
      globals.it = undefined;
      expect(() => describeStoreConformance("no runner", async () => ({}) as never)).to.throw(
        ConformanceSetupInvalid,
        /^describeStoreConformance: no describe\/it globals; run it under mocha or pass `runner` in the options$/,
      );
    } finally {
      globals.it = savedIt;
    }
  });
});
