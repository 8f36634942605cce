// Isolated plugins (issue 10), the slow variants of test/plugins/isolation.test.ts (run by
// `npm run test:long`): a folder holding every hostile plugin at once, and several stuck
// setups at once, each against a real host in a child process (stopped if it outlives its test).

import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { expect } from "chai";
import { deadlines, diagnosticsOf, expectServed, inChild, printed } from "./hostile/harness.ts";
import { paths, pluginName, prepareScenario } from "./hostile/scenario.ts";

/** Every hostile fixture whose plugin, when contained, renders nothing (interval-leak serves a source of its own). */
const everyHostile = [
  "env-rewriter.ts",
  "exit-in-loader.ts",
  "exit-in-setup.ts",
  "hoarder.ts",
  "join-override.ts",
  "prototype-polluter.ts",
  "spin-at-top-level.ts",
  "spin-in-loader.ts",
  "spin-in-renderer.ts",
  "spin-in-setup.ts",
  "spinning-disposer.ts",
  "stringify-override.ts",
  "stuck-disposer.ts",
  "throw-in-timer.ts",
  "throws-deep-value.ts",
  "throws-null-prototype.ts",
  "timer-replacer.ts",
  "unhandled-rejection.ts",
];

describe("isolated plugins, slow variants (issue 10)", function () {
  this.timeout(120_000);
  const cleanups: Array<() => void> = [];
  /** Stops a child still running when the file ends (a lost host's, whose test timed out). */
  const children = new AbortController();
  after(() => {
    children.abort();
    for (const cleanup of cleanups.splice(0)) cleanup();
  });

  it("a folder of every hostile plugin at once: every session served, nothing stored changed, before and after they are deleted", async () => {
    const config = prepareScenario(everyHostile, { options: deadlines, removeHostile: true });
    cleanups.push(config.remove);
    const { remove: _remove, ...plain } = config;
    const run = await inChild(plain, { nodeFlags: ["--max-old-space-size=256"], signal: children.signal });
    const report = await expectServed(run);
    // Each plugin that can fail said so, by name.
    for (const plugin of ["exit-in-loader", "exit-in-setup", "hoarder", "spin-at-top-level", "spin-in-loader", "spin-in-setup"]) {
      expect(diagnosticsOf(report, { plugin }), `${plugin}: ${printed(report)}`).to.not.be.empty;
    }
  });

  it("three setups that never return are stuck at the same time: start-up costs one setup deadline, not three", async () => {
    const setupDeadlineMs = 1000;
    const config = prepareScenario(["spin-in-setup.ts"], { options: { ...deadlines, setupDeadlineMs } });
    cleanups.push(config.remove);
    const at = paths(config.root);
    // Each setup notes when it began (the wall clock all threads share) in its marker, then spins.
    const code = readFileSync(path.join(at.plugins, "spin-in-setup.ts"), "utf8").replace(
      'appendFileSync(config.marker, "setup\\n");',
      'appendFileSync(config.marker, "setup " + Date.now() + "\\n");',
    );
    expect(code, "the fixture notes when its setup began").to.contain("Date.now()");
    const copies = ["spin-in-setup-2.ts", "spin-in-setup-3.ts"];
    writeFileSync(path.join(at.plugins, "spin-in-setup.ts"), code);
    for (const copy of copies) writeFileSync(path.join(at.plugins, copy), code.replaceAll("spin-in-setup", pluginName(copy)));
    const { remove: _remove, ...plain } = config;
    const run = await inChild({ ...plain, hostile: [...plain.hostile, ...copies] }, { signal: children.signal });
    const report = await expectServed(run);
    const plugins = ["spin-in-setup", ...copies.map(pluginName)];
    for (const plugin of plugins) {
      expect(diagnosticsOf(report, { plugin, phase: "setup" }), printed(report)).to.not.be.empty;
    }
    // Overlap, not speed: every setup began before the first could have missed its deadline
    // (one after another, each would begin only after the one before it was stopped, 1,000 ms
    // or more later).
    const began = plugins.map((plugin) => Number(/^setup (\d+)$/m.exec(readFileSync(at.marker(plugin), "utf8"))?.[1]));
    expect(began.every(Number.isFinite), `marks: ${began.join(", ")}`).to.equal(true);
    expect(Math.max(...began) - Math.min(...began)).to.be.below(setupDeadlineMs);
  });
});
