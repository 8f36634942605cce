// onBoundary: what each Safe Provider-Turn Boundary did, as public events on the Host and
// on the context engine (issue 33's first part): the session, the epoch and why it began,
// the Baseline when it started one, the admitted update, the request, the usage, timings.

import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { expect } from "chai";
import { type BoundaryEvent, createContextEngine, scriptedProvider } from "../../core/index.ts";
import { hostsPerTest, testSource } from "./fixtures.ts";

describe("boundary events", () => {
  const { startSession } = hostsPerTest();

  it("the Host tells each boundary once its reply is stored: the Baseline when it starts an epoch, the update when it admits one", async () => {
    const branch = testSource("core/branch", "main");
    const usage = { input: 5, cacheRead: 0, cacheWrite: 0, output: 2 };
    const { host, id } = await startSession(scriptedProvider([{ text: "one", usage }, { text: "two" }, { text: "three" }]), {
      core: [branch.core],
    });
    const events: BoundaryEvent[] = [];
    const stop = host.onBoundary((event) => events.push(event));
    host.onBoundary(() => {
      throw new Error("a listener's fault stays its own");
    });
    await host.prompt(id, "first");
    await host.step(id);
    branch.state.value = "feature";
    await host.prompt(id, "second");
    const second = await host.step(id);
    await host.prompt(id, "third");
    await host.step(id);
    expect(events.map((e) => [e.sessionId, e.epoch, e.baseline, e.update])).to.deep.equal([
      [id, { number: 1, reason: "initial" }, "core/branch is main", undefined],
      [id, { number: 1, reason: "initial" }, undefined, "core/branch is now feature"],
      [id, { number: 1, reason: "initial" }, undefined, undefined],
    ]);
    expect(events[0]?.usage).to.deep.equal(usage);
    expect(events[1]?.request).to.deep.equal(second.kind === "replied" ? second.request : undefined);
    for (const event of events) {
      expect(event.timings.boundaryMs).to.be.at.least(0);
      expect(event.timings.providerMs).to.be.at.least(0);
    }
    stop();
    await host.prompt(id, "fourth");
    await host.step(id);
    expect(events).to.have.length(3);
  });

  it("the engine tells each boundary it committed, not a retry answered from its ledger", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "engine-events-"));
    const branch = testSource("core/branch", "main");
    const engine = await createContextEngine({ dataDir: dir, core: [branch.core], builtins: false, plugins: [], watch: false });
    try {
      const events: BoundaryEvent[] = [];
      engine.onBoundary((event) => events.push(event));
      const at = (messages: unknown[]) => ({ location: dir, provider: "anthropic", model: "claude-opus-4-8", messages });
      await engine.boundary("s", at(["hi"]));
      branch.state.value = "feature";
      await engine.boundary("s", at(["hi", "hello", "next"]));
      await engine.boundary("s", at(["hi", "hello", "next"])); // a retry
      expect(events.map((e) => [e.sessionId, e.epoch.number, e.baseline, e.update, e.request])).to.deep.equal([
        ["s", 1, "core/branch is main", undefined, undefined],
        ["s", 1, undefined, "core/branch is now feature", undefined],
      ]);
    } finally {
      await engine.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
