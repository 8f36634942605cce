// The Postgres session store against the session store conformance suite, on a real
// throwaway server (see postgres-server.ts). Each rule gets its own schema, so rules
// never see each other's sessions; reopening opens a second store (its own pool) on the
// same schema, as another host would.

import { expect } from "chai";
import pg from "pg";
import { describeStoreConformance } from "../../core/conformance.ts";
import { createHost, scriptedProvider } from "../../core/index.ts";
import { SessionNotFound } from "../../core/session/errors.ts";
import { PostgresSessionStore, StoreUnavailable } from "../../core/session/store/postgres.ts";
import { type PostgresServer, startPostgres } from "./postgres-server.ts";

// Started while the file loads, so the suites below are declared only when there is a server.
const started = await startPostgres();
let schemas = 0;

if ("reason" in started) {
  // CI always has a server (.ci/run installs PostgreSQL): there a missing one is a failure.
  if (process.env.CI) throw new Error(started.reason);
  describe("session store: PostgreSQL", () => {
    it.skip(`needs a PostgreSQL server (issue 16): ${started.reason}`);
  });
} else {
  declare(started);
}

function declare(server: PostgresServer) {
  const url = server.url;
  after(() => server.stop());

  describe("session store: PostgreSQL", () => {
    it("opens, migrates once under concurrent hosts, and names the database in errors", async () => {
      const schema = `open_${process.pid}`;
      const stores = await Promise.all([1, 2, 3].map(() => PostgresSessionStore.open({ connectionString: url, schema })));
      try {
        await stores[0]?.createSession({ id: "s1", location: "/a", provider: "p", model: "m" });
        expect((await stores[2]?.session("s1"))?.location).to.equal("/a");
        const error = await stores[1]?.session("nobody").catch((e: unknown) => e);
        expect(error).to.be.an.instanceOf(SessionNotFound);
        expect(stores[0]?.database).to.match(/^postgres:\/\/127\.0\.0\.1:\d+\/postgres \(schema open_\d+\)$/);
      } finally {
        for (const store of stores) await store?.close();
      }
    });

    it("a server restart mid-session: the host reports StoreUnavailable, then goes on without losing an admitted message", async function () {
      this.timeout(30_000);
      if (server.crash === undefined) this.skip(); // an outside server (DATABASE_URL) is not ours to restart
      const crash = server.crash as NonNullable<PostgresServer["crash"]>;
      const store = await PostgresSessionStore.open({ connectionString: url, schema: `restart_${process.pid}`, poolSize: 2 });
      const provider = scriptedProvider();
      const host = await createHost({ store, providers: { scripted: provider }, builtins: false, plugins: [], watch: false });
      try {
        const id = await host.createSession({ location: "/work", provider: "scripted", model: "m" });
        await host.prompt(id, "one");
        expect((await host.step(id)).kind).to.equal("replied");
        const before = await host.messages(id);
        crash.kill();
        const error = await host.prompt(id, "two").catch((e: unknown) => e);
        expect(error).to.be.an.instanceOf(StoreUnavailable);
        expect((error as Error).message)
          .to.contain(store.database)
          .and.contain(`session ${id}`);
        crash.start();
        await host.prompt(id, "two");
        expect((await host.step(id)).kind).to.equal("replied");
        const after = await host.messages(id);
        expect(after.slice(0, before.length)).to.deep.equal(before);
        expect(after.map((m) => [m.role, m.text])).to.deep.equal([
          ["user", "one"],
          ["assistant", "reply 1: one"],
          ["user", "two"],
          ["assistant", "reply 2: two"],
        ]);
      } finally {
        await host.close();
      }
    });

    it("a server that cannot be reached is StoreUnavailable naming the database", async () => {
      const error = await PostgresSessionStore.open({ connectionString: "postgres://nobody@127.0.0.1:1/nowhere" }).catch(
        (e: unknown) => e,
      );
      expect(error).to.be.an.instanceOf(StoreUnavailable);
      expect((error as Error).message).to.contain("postgres://127.0.0.1:1/nowhere");
    });
  });

  describeStoreConformance("PostgresSessionStore", async () => {
    const schema = `conformance_${process.pid}_${++schemas}`;
    const opened: PostgresSessionStore[] = [];
    const open = async () => {
      const store = await PostgresSessionStore.open({ connectionString: url, schema, poolSize: 4 });
      opened.push(store);
      return store;
    };
    return {
      store: await open(),
      reopen: open,
      close: async () => {
        for (const store of opened) await store.close();
        const client = new pg.Client({ connectionString: url });
        await client.connect();
        await client.query(`DROP SCHEMA ${schema} CASCADE`);
        await client.end();
      },
    };
  });
}
