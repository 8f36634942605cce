// A PostgreSQL step is three round trips (issue 32, decision 171): one statement reads the
// boundary, one commits it, one commits the reply; after a prompt the same host added, the
// read came with the prompt (decision 178). The queries `pg` sends are counted.

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
  it("a prompt and its step send 3 queries: the prompt with the boundary's read, its commit, the reply's commit", async () => {
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
        counter.sent = 0;
        counter.on = true;
        await host.prompt(id, `on ${value}`);
        const result = await host.step(id);
        counter.on = false;
        perStep.push(counter.sent);
        kinds.push(result.kind);
      }
      expect(kinds).to.deep.equal(["replied", "replied", "replied"]);
      // A first Baseline, an update, nothing new.
      expect(perStep).to.deep.equal([3, 3, 3]);
      const roles = (await host.messages(id)).map((message) => message.role);
      expect(roles).to.deep.equal(["user", "assistant", "user", "system-update", "assistant", "user", "assistant"]);
    } finally {
      counter.restore();
      await host.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("a read taken with a prompt that another host has moved past is not committed on: the step plans again from what is stored", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "pg-ahead-"));
    const schema = `ahead_${process.pid}`;
    const open = async (provider: ReturnType<typeof scriptedProvider>) =>
      createHost({
        providers: { scripted: provider },
        store: await PostgresSessionStore.open({ connectionString: server().url, schema, poolSize: 2 }),
        core: [testSource("core/branch", "main").core],
        builtins: false,
        plugins: [],
        watch: false,
        onDiagnostic: false,
      });
    const [first, second] = [scriptedProvider(), scriptedProvider()];
    const a = await open(first);
    const b = await open(second);
    try {
      const id = await a.createSession({ location: dir, provider: "scripted", model: "m" });
      await a.prompt(id, "one");
      await a.step(id);
      // A's store now knows the session: its next prompt brings the next step's read with it.
      await a.prompt(id, "two");
      // B admits that prompt and its own in one boundary, and stores the reply.
      await b.prompt(id, "three");
      expect((await b.step(id)).kind).to.equal("replied");
      // A's read said "two" was pending; its commit on that read fails, it reads again: nothing to do.
      expect((await a.step(id)).kind).to.equal("idle");
      expect(first.requests).to.have.length(1);
      expect(
        second.requests.map((request) => request.messages.filter((m) => m.role === "user").map((m) => m.text)),
      ).to.deep.equal([["one", "two", "three"]]);
      const texts = (await a.messages(id)).filter((m) => m.role === "user").map((m) => m.text);
      expect(texts).to.deep.equal(["one", "two", "three"]);
    } finally {
      await a.close();
      await b.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
