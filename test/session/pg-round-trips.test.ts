// A PostgreSQL step is three round trips (issue 32, decision 171): one statement reads the
// boundary, one commits it, one commits the reply. The queries `pg` sends are counted.

import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { expect } from "chai";
import pg from "pg";
import { createHost } from "../../core/host/host.ts";
import { scriptedProvider } from "../../core/providers/scripted.ts";
import { PostgresSessionStore } from "../../core/session/store/postgres.ts";
import { testSource } from "./fixtures.ts";
import { describeWithPostgres } from "./postgres-server.ts";

/** Counts the queries every `pg` client sends while `counting` is on. */
function queryCounter() {
  const original = pg.Client.prototype.query;
  const counter = {
    sent: 0,
    on: false,
    restore: () => {
      pg.Client.prototype.query = original;
    },
  };
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    if (counter.on) counter.sent += 1;
    return (original as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof original;
  return counter;
}

describeWithPostgres("PostgreSQL round trips per step", (server) => {
  it("a step sends 3 queries: read the boundary, commit it, commit the reply (a first Baseline, an update, nothing new)", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "pg-trips-"));
    const counter = queryCounter();
    const store = await PostgresSessionStore.open({
      connectionString: server().url,
      schema: `trips_${process.pid}`,
      poolSize: 2,
    });
    const branch = testSource("core/branch", "main");
    const host = await createHost({
      providers: { scripted: scriptedProvider() },
      store,
      core: [branch.core],
      builtins: false,
      plugins: [],
      watch: false,
      onDiagnostic: false,
    });
    try {
      const id = await host.createSession({ location: dir, provider: "scripted", model: "m" });
      const perStep: number[] = [];
      const kinds: string[] = [];
      for (const value of ["main", "feature", "feature"]) {
        branch.state.value = value;
        await host.prompt(id, `on ${value}`);
        counter.sent = 0;
        counter.on = true;
        const result = await host.step(id);
        counter.on = false;
        perStep.push(counter.sent);
        kinds.push(result.kind);
      }
      expect(kinds).to.deep.equal(["replied", "replied", "replied"]);
      expect(perStep).to.deep.equal([3, 3, 3]);
      const roles = (await host.messages(id)).map((message) => message.role);
      expect(roles).to.deep.equal(["user", "assistant", "user", "system-update", "assistant", "user", "assistant"]);
    } finally {
      counter.restore();
      await host.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
