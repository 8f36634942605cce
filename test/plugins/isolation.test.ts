// Isolated plugins (issue 10): no plugin can freeze, kill or corrupt the host. One test
// per fault class. Each puts a hostile plugin (test/plugins/hostile/) beside the
// well-behaved `good` plugin in a real plugin folder, runs a real host (createHost, a
// real SQLite file, the scripted provider) with two sessions stepping before and after
// the fault, and asserts that
//   - every host call settled (nothing stuck, nothing thrown) and the process lived on;
//   - `good` still serves: its Baseline in both sessions, its Mid-Conversation System
//     Message once its value changes;
//   - what was stored is exactly what a host without the hostile plugin stores (read
//     back from the SQLite file by this process), and no injected text is anywhere in it;
//   - the hostile code really ran (a marker line it wrote, or its diagnostic).
//
// A plugin that runs in the host's own realm can freeze, end or pollute the process that
// hosts it, so every scenario whose fault would do that to this test process runs its
// host in a child process (test/plugins/hostile/child.ts): a frozen or dead host fails its
// test instead of the test run. Nothing here bounds a host call by the clock (a first
// start on a cold cache, on a busy machine, is slow and still right): the tests assert what
// happened (each call settled, in order; which deadline fired and for whom; what was
// stored). A host that is lost never reports, and the test waiting for it fails by its
// timeout, naming the call the child was in; children still running when the file ends
// are stopped. The children run on a compiled copy of the
// sources (test/support/compiled.ts: under tsx each child spends ~3 s starting, compiled
// ~0.5 s), several at a time, all started before the first test. Faults a test process
// survives (a renderer throwing a strange value, a disposer that never settles) run
// in-process.
//
// Deadlines are small (harness.ts `deadlines`) and passed to createHost as `deadlineMs`,
// `setupDeadlineMs` and `disposeDeadlineMs`.

import { readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { expect } from "chai";
import { createHost, type Host, scriptedProvider } from "../../core/index.ts";
import { programArgs } from "../support/compiled.ts";
import {
  type ChildOptions,
  deadlines,
  diagnosticsOf,
  expectServed,
  inChild,
  markerOf,
  pool,
  printed,
  type Run,
  reportOf,
  spawnChild,
} from "./hostile/harness.ts";
import { paths, prepareScenario, runScenario } from "./hostile/scenario.ts";

/** Under `npm run test:long`, each scenario runs in a child of its own. */
const isLong = process.env.CONTEXT_HOST_LONG === "1";

/** Resolves once `probe` holds: bounded only by the test's timeout. */
async function until(probe: () => boolean): Promise<void> {
  while (!probe()) await new Promise((resolve) => setTimeout(resolve, 10));
}

/** The scenarios that run in child processes, by test name; started together in `before`. */
const childScenarios: Record<string, { hostile: readonly string[]; options?: ChildOptions }> = {
  "well-behaved only": { hostile: [] },
  "loader spins": { hostile: ["spin-in-loader.ts"] },
  "renderer spins": { hostile: ["spin-in-renderer.ts"] },
  "setup spins": { hostile: ["spin-in-setup.ts"] },
  "module top level spins": { hostile: ["spin-at-top-level.ts"] },
  "loader exits": { hostile: ["exit-in-loader.ts"] },
  "timer throws": { hostile: ["throw-in-timer.ts"] },
  "unhandled rejection": { hostile: ["unhandled-rejection.ts"] },
  "out of memory": { hostile: ["hoarder.ts"], options: { nodeFlags: ["--max-old-space-size=256"] } },
  "Object.prototype": { hostile: ["prototype-polluter.ts"], options: { removeHostile: true } },
  "Array.prototype.join": { hostile: ["join-override.ts"], options: { removeHostile: true } },
  "JSON.stringify": { hostile: ["stringify-override.ts"], options: { removeHostile: true } },
  "timers replaced": { hostile: ["timer-replacer.ts"] },
  "env rewritten": { hostile: ["env-rewriter.ts"] },
  "disposer spins": { hostile: ["spinning-disposer.ts"], options: { removeHostile: true } },
};

describe("isolated plugins: a hostile plugin cannot freeze, kill or corrupt the host (issue 10)", function () {
  // Not a bound on the host: only a host that is lost (a call that never ends) comes near it.
  this.timeout(180_000);
  const runs = new Map<string, Promise<Run>>();
  const cleanups: Array<() => void> = [];
  /** Stops the children still running when the file ends (a lost host's). */
  const children = new AbortController();
  /** The call each child was last in, by scenario name, for a test that timed out. */
  const lastCall = new Map<string, string>();
  const childOptions = (name: string, options: ChildOptions = {}): ChildOptions => ({
    ...options,
    signal: children.signal,
    onProgress: (line) => lastCall.set(name, line),
  });

  before(() => {
    // A setup that sleeps 4 s (within its deadline): a host call slower, and a child silent
    // longer, than any fixed bound a harness could set for a loaded machine's cold start.
    // It sleeps most of its time: started at once, beside the others.
    const slow = prepareScenario(["slow-start.ts"], { options: { ...deadlines, setupDeadlineMs: 20_000 } });
    cleanups.push(slow.remove);
    const { remove: _slow, ...slowPlain } = slow;
    runs.set("slow start", inChild(slowPlain, childOptions("slow start")));
    // Children mostly wait on deadlines once started: more of them than cores keeps the file short.
    const limit = pool(Math.max(4, Math.min(6, os.availableParallelism())));
    if (!isLong) {
      // `npm test`: the control alone, and every hostile plugin in one folder of one child
      // host; each test below reads its own plugin's part of that run. `npm run test:long`
      // gives each fault class a child of its own.
      const { "well-behaved only": control = { hostile: [] }, ...hostile } = childScenarios;
      const together = prepareScenario(
        Object.values(hostile).flatMap((scenario) => scenario.hostile),
        { options: deadlines, removeHostile: true },
      );
      const alone = prepareScenario(control.hostile, { options: deadlines, removeHostile: false });
      cleanups.push(together.remove, alone.remove);
      const { remove: _a, ...alonePlain } = alone;
      const { remove: _t, ...togetherPlain } = together;
      runs.set(
        "well-behaved only",
        limit(() => inChild(alonePlain, childOptions("well-behaved only"))),
      );
      const all = limit(() =>
        inChild(togetherPlain, childOptions("together", { nodeFlags: ["--max-old-space-size=256"], removeHostile: true })),
      );
      for (const name of Object.keys(hostile)) runs.set(name, all);
      return;
    }
    for (const [name, scenario] of Object.entries(childScenarios)) {
      const config = prepareScenario(scenario.hostile, {
        options: deadlines,
        removeHostile: scenario.options?.removeHostile ?? false,
      });
      cleanups.push(config.remove);
      const { remove: _remove, ...plain } = config;
      runs.set(
        name,
        limit(() => inChild(plain, childOptions(name, scenario.options))),
      );
    }
  });

  afterEach(function () {
    if (this.currentTest?.timedOut !== true) return;
    const calls = [...lastCall].map(([name, line]) => `${name}: ${line}`).join("; ");
    console.error(`a host call never ended; the children were last in: ${calls || "nothing"}`);
  });

  after(async () => {
    children.abort();
    await Promise.all(runs.values());
    for (const cleanup of cleanups.splice(0)) cleanup();
  });

  const run = (name: keyof typeof childScenarios) => runs.get(name) as Promise<Run>;

  it("(the harness) a child host with only well-behaved plugins stores exactly what `good` makes", async () => {
    await expectServed(await run("well-behaved only"));
  });

  it("(the harness) a host that is slow to start is waited for, not counted as lost", async () => {
    const r = await (runs.get("slow start") as Promise<Run>);
    const report = await expectServed(r);
    expect(markerOf(r.config, "slow-start")).to.deep.equal(["setup began", "setup ended"]);
    expect(report.plugins.map((p) => p.name)).to.deep.equal(["good", "slow-start"]);
  });

  describe("for (;;) {} holds only the plugin's own thread", () => {
    it("in a loader: the source is unavailable, other plugins and sessions are served", async () => {
      const r = await run("loader spins");
      await expectServed(r);
      expect(markerOf(r.config, "spin-in-loader")).to.include("loader");
    });

    it("a deadline miss is a diagnostic naming the plugin, the phase, the key and the deadline", async () => {
      const report = reportOf(await run("loader spins"));
      const missed = diagnosticsOf(report, { plugin: "spin-in-loader", phase: "load", key: "spin-in-loader/x" });
      expect(missed, printed(report)).to.not.be.empty;
      expect(missed[0]?.message).to.contain(`${deadlines.deadlineMs} ms`);
    });

    it("in a renderer", async () => {
      const r = await run("renderer spins");
      const report = await expectServed(r);
      expect(markerOf(r.config, "spin-in-renderer")).to.include("renderer");
      expect(diagnosticsOf(report, { plugin: "spin-in-renderer", key: "spin-in-renderer/x" }), printed(report)).to.not.be.empty;
    });

    it("in setup: a diagnostic names the setup deadline, the plugin is not active, the host starts", async () => {
      const r = await run("setup spins");
      const report = await expectServed(r);
      expect(markerOf(r.config, "spin-in-setup")).to.include("setup");
      const missed = diagnosticsOf(report, { plugin: "spin-in-setup", phase: "setup" });
      expect(missed, printed(report)).to.not.be.empty;
      expect(missed[0]?.message).to.contain(`${deadlines.setupDeadlineMs} ms`);
      expect(report.plugins.map((p) => p.name)).to.deep.equal(["good"]);
    });

    it("at module top level: the plugin is not active, the host starts", async () => {
      const r = await run("module top level spins");
      const report = await expectServed(r);
      expect(diagnosticsOf(report, { plugin: "spin-at-top-level" }), printed(report)).to.not.be.empty;
      expect(report.plugins.map((p) => p.name)).to.deep.equal(["good"]);
    });
  });

  describe("a plugin's crash ends only its own worker", () => {
    it("process.exit(0) in a loader does not end the host", async () => {
      const r = await run("loader exits");
      const report = await expectServed(r);
      expect(markerOf(r.config, "exit-in-loader")).to.include("loader");
      expect(diagnosticsOf(report, { plugin: "exit-in-loader" }), printed(report)).to.not.be.empty;
    });

    it("a throw inside the plugin's setTimeout is a diagnostic, not a host crash", async () => {
      const r = await run("timer throws");
      const report = await expectServed(r);
      expect(markerOf(r.config, "throw-in-timer")).to.include("timer");
      const crashed = report.diagnostics.filter((d) => d.plugin === "throw-in-timer" && d.message.includes("thrown in a timer"));
      expect(crashed, printed(report)).to.not.be.empty;
    });

    it("an unhandled rejection is a diagnostic, not a host crash", async () => {
      const r = await run("unhandled rejection");
      const report = await expectServed(r);
      expect(markerOf(r.config, "unhandled-rejection")).to.include("setup");
      const crashed = report.diagnostics.filter(
        (d) => d.plugin === "unhandled-rejection" && d.message.includes("rejected and never handled"),
      );
      expect(crashed, printed(report)).to.not.be.empty;
    });

    it("a loader that keeps allocating runs its own heap out of memory, not the host's", async () => {
      const r = await run("out of memory");
      const report = await expectServed(r);
      expect(markerOf(r.config, "hoarder")).to.include("loader");
      expect(diagnosticsOf(report, { plugin: "hoarder" }), printed(report)).to.not.be.empty;
    });
  });

  describe("a plugin's global changes stay in its own realm (and leave with its file)", () => {
    for (const [name, plugin] of [
      ["Object.prototype", "prototype-polluter"],
      ["Array.prototype.join", "join-override"],
      ["JSON.stringify", "stringify-override"],
    ] as const) {
      it(`${name} overridden: nothing is injected into other sessions' stored Baselines and messages, before or after the file is deleted`, async () => {
        const r = await run(name);
        const report = await expectServed(r);
        expect(markerOf(r.config, plugin), "the override held where the plugin ran").to.include("polluted");
        expect(report.removedInTime, "the deleted plugin left the host").to.equal(true);
      });
    }

    it("setTimeout, setInterval, setImmediate and the clock replaced: deadlines still end a loader that never settles", async () => {
      const r = await run("timers replaced");
      const report = await expectServed(r);
      expect(markerOf(r.config, "timer-replacer")).to.include("loader");
      const missed = diagnosticsOf(report, { plugin: "timer-replacer", phase: "load", key: "timer-replacer/x" });
      expect(missed, printed(report)).to.not.be.empty;
      expect(missed[0]?.message).to.contain(`${deadlines.deadlineMs} ms`);
    });

    it("one plugin cannot rewrite the env another plugin's loader receives", async () => {
      const r = await run("env rewritten");
      await expectServed(r);
      // The rewriter's loader ran at every boundary while its file was there (and rewrote
      // whatever its realm let it): all four alone, the two before the removal with the others.
      expect(markerOf(r.config, "env-rewriter").filter((line) => line.startsWith("rewrote"))).to.have.length(isLong ? 4 : 2);
    });
  });

  describe("values thrown by a renderer are contained", () => {
    const folders: Array<() => void> = [];
    afterEach(() => {
      for (const remove of folders.splice(0)) remove();
    });

    async function inProcess(hostile: string): Promise<Run> {
      const config = prepareScenario([hostile], { options: deadlines });
      folders.push(config.remove);
      return { config, report: await runScenario(config), ending: "the scenario finished" };
    }

    for (const plugin of ["throws-null-prototype", "throws-deep-value"]) {
      const what = plugin === "throws-null-prototype" ? "Object.create(null)" : "a value nested 3,000 deep";
      it(`a renderer throwing ${what}: a diagnostic for its key, every session served`, async () => {
        const r = await inProcess(`${plugin}.ts`);
        const report = await expectServed(r);
        expect(markerOf(r.config, plugin)).to.include("renderer");
        const fault = diagnosticsOf(report, { plugin, key: `${plugin}/x`, phase: "baseline" });
        expect(fault, printed(report)).to.not.be.empty;
      });
    }
  });

  describe("a disposer that never settles", () => {
    it("(a promise) blocks neither the plugin's reloads nor host.close()", async () => {
      const config = prepareScenario(["stuck-disposer.ts"], { options: deadlines });
      cleanups.push(config.remove);
      const at = paths(config.root);
      const file = path.join(at.plugins, "stuck-disposer.ts");
      const code = readFileSync(file, "utf8");
      const host = await createHost({
        dataDir: at.data,
        plugins: [at.plugins],
        providers: { scripted: scriptedProvider() },
        builtins: false,
        watch: true,
        debounceMs: 20,
        pluginSettings: { good: { valueFile: at.value }, "stuck-disposer": { marker: at.marker("stuck-disposer") } },
        // Only the dispose deadline is this test's subject. A load or setup that missed its
        // small deadline on a busy machine would stop the worker, and with it the first
        // generation, before its disposer could run.
        ...deadlines,
        deadlineMs: 2000,
        setupDeadlineMs: 2000,
      });
      let closed = false;
      // What the plugin set did, for a failure's message.
      const events: string[] = [];
      host.onPluginEvent((event) => events.push(JSON.stringify(event)));
      try {
        const generation = () => host.plugins().find((p) => p.name === "stuck-disposer")?.generation ?? 0;
        const setups = () => markerOf(config, "stuck-disposer").filter((line) => line.startsWith("setup "));
        expect(setups(), "the first generation set up").to.deep.equal(["setup first"]);
        // Two reloads: the second waits for nothing the first generation's disposer holds. A
        // reload counts once the new code set up and a generation newer than the last is active
        // (a restart after a missed dispose deadline may number generations of its own).
        // Waits end when what they wait for happened; one that never does is this test's
        // timeout (a blocked reload or close), not a wall-clock bound of its own.
        for (const next of ["second", "third"]) {
          const before = generation();
          writeFileSync(file, code.replace('const generation = "first"', `const generation = "${next}"`));
          await until(() => generation() > before && setups().at(-1) === `setup ${next}`);
        }
        // The first displaced generation's disposer was called and never settled: at its
        // deadline the plugin's worker was stopped (decision 060), and the generations living
        // in it went with it — a disposer cannot run in a stopped worker, so "second" may never
        // be disposed, while "third" came up in a fresh worker. A write's quiet re-check that
        // overtakes the load its first event started reuses that load's generation (decision
        // 195): no "second" is closed unused before the first is displaced.
        const missedDisposes = () =>
          host.diagnostics.filter(
            (d) =>
              d.plugin === "stuck-disposer" && d.phase === "dispose" && d.message.includes(`${deadlines.disposeDeadlineMs} ms`),
          );
        await until(() => missedDisposes().length > 0);
        const marker = markerOf(config, "stuck-disposer");
        const disposed = marker.filter((line) => line.startsWith("dispose "));
        expect(disposed[0], `${JSON.stringify(marker)}\n${events.join("\n")}`).to.equal("dispose first");
        const id = await host.createSession({ location: at.a, provider: "scripted", model: "m" });
        await host.prompt(id, "still served?");
        const step = await host.step(id);
        expect(step.kind === "replied" ? step.request.system : step).to.deep.equal([`good: v1 @ ${at.a}`]);
        // Closing runs the active generation's disposer, which never settles either (or waits
        // behind the second's in the same worker): close returns because the dispose deadline
        // fired, and a diagnostic says so for the active generation.
        const active = generation();
        await host.close();
        closed = true;
        expect(
          missedDisposes().some((d) => d.message.includes(`generation ${active}`)),
          JSON.stringify(host.diagnostics),
        ).to.equal(true);
      } finally {
        // Released in the background if the test failed before closing.
        if (!closed) void closeQuietly(host);
      }
    });

    it("(a for (;;) {} in a disposer) does not keep the plugin from leaving, or the host from closing", async () => {
      const r = await run("disposer spins");
      await expectServed(r);
    });
  });

  describe("context-host render", () => {
    async function render(hostile: string) {
      const config = prepareScenario([hostile]);
      cleanups.push(config.remove);
      const at = paths(config.root);
      const settings = path.join(config.root, "render-config.json");
      writeFileSync(settings, JSON.stringify({ pluginSettings: { good: { valueFile: at.value } } }));
      const program = programArgs("scripts/cli/context-host.ts");
      // A leaked handle would keep render alive: the test then fails by its timeout.
      const ended = await spawnChild(
        [...program, "render", "--plugins", at.plugins, "--location", at.a, "--config", settings],
        config.root,
        { signal: children.signal },
      );
      return { at, ...ended };
    }

    it("exits 0 and prints the Baseline when a plugin leaks a setInterval", async () => {
      const { at, code, killed, stdout, stderr, ms } = await render("interval-leak.ts");
      expect({ killed, code }, `render after ${ms} ms; stderr: ${stderr}`).to.deep.equal({ killed: undefined, code: 0 });
      expect(stdout).to.contain(`good: v1 @ ${at.a}`).and.contain("interval-leak: still rendered");
    });

    it("exits 2, prints the Baseline and names the plugin when a plugin calls process.exit(0) in setup", async () => {
      const { at, code, killed, stdout, stderr, ms } = await render("exit-in-setup.ts");
      expect({ killed, code }, `render after ${ms} ms; stdout: ${stdout}; stderr: ${stderr}`).to.deep.equal({
        killed: undefined,
        code: 2,
      });
      expect(stdout).to.contain(`good: v1 @ ${at.a}`).and.not.contain("exit-in-setup:");
      expect(stderr).to.contain("exit-in-setup");
    });
  });
});

async function closeQuietly(host: Host): Promise<void> {
  try {
    await host.close();
  } catch {
    // The test already failed on it.
  }
}
