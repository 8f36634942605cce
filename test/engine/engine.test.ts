// The context engine for a caller's own agent loop (issue 29, decision 102): each
// semantic of `engine.boundary` is one test; the caller's history is opaque messages.

import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { expect } from "chai";
import Type from "typebox";
import { type ContextEngine, type ContextEngineOptions, createContextEngine } from "../../core/host/engine.ts";
import { PostgresSessionStore } from "../../core/session/store/postgres.ts";
import type { SessionStore } from "../../core/session/store/store.ts";
import { InitializationBlocked } from "../../core/system-context/index.ts";
import * as SystemContext from "../../core/system-context.ts";
import { testSource } from "../session/fixtures.ts";
import { describeWithPostgres } from "../session/postgres-server.ts";

describe("context engine (SQLite store)", () => declare(undefined));

describeWithPostgres("context engine (PostgreSQL store)", (server) => {
  let schemas = 0;
  let schema = "";
  beforeEach(() => {
    schema = `engine_${process.pid}_${++schemas}`;
  });
  // Each engine its own pool on the test's schema, as another process would have.
  declare(() => PostgresSessionStore.open({ connectionString: server().url, schema, poolSize: 2 }));
});

/** The semantics of `engine.boundary`, on the default store or on the stores `open` opens (one per engine). */
function declare(open: (() => Promise<SessionStore>) | undefined) {
  let dir = "";
  const engines: ContextEngine[] = [];
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "engine-"));
  });
  afterEach(async () => {
    await Promise.all(engines.splice(0).map((engine) => engine.close()));
    rmSync(dir, { recursive: true, force: true });
  });

  async function start(options: Omit<ContextEngineOptions, "dataDir"> = {}): Promise<ContextEngine> {
    const own = open === undefined ? {} : { store: await open() };
    const engine = await createContextEngine({ builtins: false, plugins: [], watch: false, ...options, ...own, dataDir: dir });
    engines.push(engine);
    return engine;
  }

  const at = (messages: readonly unknown[], more: Partial<{ provider: string; model: string; location: string }> = {}) => ({
    location: dir,
    provider: "anthropic",
    model: "claude-opus-4-8",
    messages,
    ...more,
  });
  const user = (text: string) => ({ role: "user", content: text });
  const assistant = (text: string) => ({ role: "assistant", content: text });

  it("the first call of a session renders the Baseline and admits no update", async () => {
    const branch = testSource("core/branch", "main");
    const engine = await start({ core: [branch.core] });
    const result = await engine.boundary("s1", at([user("hi")]));
    expect(result).to.deep.equal({ baseline: "core/branch is main", updates: [], epoch: { number: 1, reason: "initial" } });
  });

  it("a later call admits changed sources after the caller's newest message, never earlier", async () => {
    const branch = testSource("core/branch", "main");
    const engine = await start({ core: [branch.core] });
    const history = [user("hi")];
    await engine.boundary("s1", at(history));
    history.push(assistant("hello"), user("switch branches"));
    branch.state.value = "feature";
    const result = await engine.boundary("s1", at(history));
    expect(result.updates).to.deep.equal([{ position: 3, text: "core/branch is now feature" }]);
    history.push(assistant("done"), user("and now?"));
    const later = await engine.boundary("s1", at(history));
    // Nothing changed: the earlier update stays where it was admitted, nothing new.
    expect(later.updates).to.deep.equal([{ position: 3, text: "core/branch is now feature" }]);
    expect(later.baseline).to.equal("core/branch is main");
  });

  it("a retry with the same messages returns an identical result and admits nothing twice", async () => {
    const branch = testSource("core/branch", "main");
    const engine = await start({ core: [branch.core] });
    await engine.boundary("s1", at([user("hi")]));
    branch.state.value = "feature";
    const history = [user("hi"), assistant("hello"), user("next")];
    const first = await engine.boundary("s1", at(history));
    branch.state.value = "release"; // changed again, but the retry must not admit it
    const loads = branch.state.loads;
    const again = await engine.boundary("s1", at([...history]));
    expect(again).to.deep.equal(first);
    expect(branch.state.loads).to.equal(loads); // the retry did not even observe the sources
  });

  it("a changed provider or model, location, or a history that no longer extends the one seen starts a new epoch", async () => {
    const branch = testSource("core/branch", "main");
    const engine = await start({ core: [branch.core] });
    const history = [user("hi")];
    await engine.boundary("s1", at(history));
    history.push(assistant("hello"), user("more"));
    branch.state.value = "feature";
    expect((await engine.boundary("s1", at(history, { model: "claude-opus-5" }))).epoch).to.deep.equal({
      number: 2,
      reason: "switch",
    });
    const other = mkdtempSync(path.join(os.tmpdir(), "engine-move-"));
    try {
      history.push(assistant("ok"), user("elsewhere"));
      const moved = await engine.boundary("s1", at(history, { model: "claude-opus-5", location: other }));
      expect(moved.epoch).to.deep.equal({ number: 3, reason: "move" });
      // The caller compacted: its history is a summary and the last prompt.
      const compacted = [user("summary of before"), user("go on")];
      const result = await engine.boundary("s1", at(compacted, { model: "claude-opus-5", location: other }));
      expect(result).to.deep.equal({
        baseline: "core/branch is feature",
        updates: [],
        epoch: { number: 4, reason: "compaction" },
      });
    } finally {
      rmSync(other, { recursive: true, force: true });
    }
  });

  it("is durable across a restart: the same Baseline verbatim and updates at the same positions", async () => {
    const branch = testSource("core/branch", "main");
    const first = await start({ core: [branch.core] });
    const history = [user("hi")];
    await first.boundary("s1", at(history));
    history.push(assistant("hello"), user("next"));
    branch.state.value = "feature";
    const before = await first.boundary("s1", at(history));
    await first.close();
    engines.splice(engines.indexOf(first), 1);

    branch.state.value = "other"; // the restarted process observes differently; a retry still answers as before
    const second = await start({ core: [branch.core] });
    expect(await second.boundary("s1", at(history))).to.deep.equal(before);
    history.push(assistant("ok"), user("again"));
    const after = await second.boundary("s1", at(history));
    expect(after.baseline).to.equal(before.baseline);
    expect(after.updates).to.deep.equal([...before.updates, { position: 5, text: "core/branch is now other" }]);
  });

  it("two processes on one session admit each change once", async () => {
    const branch = testSource("core/branch", "main");
    const one = await start({ core: [branch.core] });
    const two = await start({ core: [branch.core] });
    await one.boundary("s1", at([user("hi")]));
    branch.state.value = "feature";
    const history = [user("hi"), assistant("hello"), user("next")];
    const [a, b] = await Promise.all([one.boundary("s1", at(history)), two.boundary("s1", at(history))]);
    expect(a).to.deep.equal(b);
    expect(a.updates).to.deep.equal([{ position: 3, text: "core/branch is now feature" }]);
  });

  it("preview and epoch tell what would be admitted and what is active, admitting nothing", async () => {
    const branch = testSource("core/branch", "main");
    const engine = await start({ core: [branch.core] });
    expect(await engine.epoch("s1")).to.equal(undefined);
    expect(await engine.preview("s1", { location: dir })).to.include({ kind: "new-epoch", baseline: "core/branch is main" });
    await engine.boundary("s1", at([user("hi")]));
    branch.state.value = "feature";
    expect(await engine.preview("s1")).to.include({ kind: "update", text: "core/branch is now feature" });
    expect((await engine.epoch("s1"))?.snapshot["core/branch"]?.value).to.equal("main");
  });

  it("refuses a first Baseline that unavailable core sources block, naming them", async () => {
    const down = {
      key: "core/down",
      load: () =>
        SystemContext.make({
          key: "core/down",
          schema: Type.String(),
          load: () => SystemContext.unavailable,
          baseline: (value: string) => value,
          update: (_previous: string, value: string) => value,
        }),
    };
    const engine = await start({ core: [down] });
    let error: unknown;
    await engine.boundary("s1", at([user("hi")])).catch((e: unknown) => {
      error = e;
    });
    expect(error).to.be.instanceOf(InitializationBlocked);
    expect((error as InitializationBlocked).keys).to.deep.equal(["core/down"]);
  });
}
