// The plugin worker's life (decision 060), with real workers and real plugin folders: a
// reload runs in the same worker, a stopped worker is restarted with the last good bundle,
// a plugin that keeps stopping is disabled until its file changes, and setups of several
// plugins run concurrently.

import fs from "node:fs";
import path from "node:path";
import { expect } from "chai";
import { workerProgram } from "../../core/plugins/plugin-worker.ts";
import {
  baselineOf,
  diagnosticsLike,
  eventually,
  generationOf,
  type RunningHost,
  textPlugin,
  usePluginHarness,
  write,
} from "./harness.ts";

/** A plugin whose source's value is the id of the thread its loader runs on; it exits when `trigger` exists. */
function threadPlugin(options: { name: string; tag: string; trigger?: string; exitCode?: number }): string {
  const trigger = options.trigger === undefined ? "" : JSON.stringify(options.trigger);
  return `import { existsSync } from "node:fs";
import { threadId } from "node:worker_threads";
import { definePlugin } from "context-host";
import Type from "typebox";

export default definePlugin({
  name: ${JSON.stringify(options.name)},
  setup(api) {
    api.source({
      key: ${JSON.stringify(`${options.name}/thread`)},
      schema: Type.String(),
      load: () => {
        ${trigger === "" ? "" : `if (existsSync(${trigger})) process.exit(${options.exitCode ?? 3});`}
        return ${JSON.stringify(options.tag)} + " on thread " + threadId;
      },
      baseline: (value) => value,
      update: (_previous, value) => value,
    });
  },
});
`;
}

async function baselineText(running: RunningHost): Promise<string> {
  return (await baselineOf(running)).baseline;
}

function threadOf(text: string, tag: string): number | undefined {
  const match = new RegExp(`${tag} on thread (\\d+)`).exec(text);
  return match === null ? undefined : Number(match[1]);
}

describe("Plugin workers: one worker per plugin, across reloads", () => {
  const harness = usePluginHarness();

  it("runs each plugin in a worker of its own, not on the host's thread", async () => {
    const folder = harness.tempFolder();
    write(path.join(folder, "one.ts"), threadPlugin({ name: "one", tag: "one" }));
    write(path.join(folder, "two.ts"), threadPlugin({ name: "two", tag: "two" }));
    const running = await harness.start({ folders: [folder], watch: false });
    const text = await baselineText(running);
    const one = threadOf(text, "one");
    const two = threadOf(text, "two");
    expect(one).to.be.a("number").and.not.equal(0);
    expect(two).to.be.a("number").and.not.equal(0);
    expect(one).to.not.equal(two);
  });

  it("evaluates a new generation inside the same worker: a reload keeps the thread", async () => {
    const folder = harness.tempFolder();
    const file = write(path.join(folder, "live.ts"), threadPlugin({ name: "live", tag: "first" }));
    const running = await harness.start({ folders: [folder] });
    const before = threadOf(await baselineText(running), "first");
    write(file, threadPlugin({ name: "live", tag: "second" }));
    await eventually(() => generationOf(running, "live") === 2, "generation 2");
    const after = threadOf(await baselineText(running), "second");
    expect(after).to.equal(before);
  });

  it("what a plugin prints or logs reaches the host's logger with control characters escaped", async () => {
    const folder = harness.tempFolder();
    write(
      path.join(folder, "noisy.ts"),
      `import { definePlugin } from "context-host";
export default definePlugin({
  name: "noisy",
  setup(api) {
    console.log("printed \\u001b[2J\\u001b]0;owned\\u0007 done");
    api.services.logger.warn("logged \\u001b[31mred\\u0000");
  },
});
`,
    );
    const running = await harness.start({ folders: [folder], watch: false });
    await eventually(() => running.logged.length >= 2, "both lines to reach the logger");
    expect(running.logged).to.include.members([
      "info printed \\u{1b}[2J\\u{1b}]0;owned\\u{7} done",
      "warn logged \\u{1b}[31mred\\u{0}",
    ]);
    // biome-ignore lint/suspicious/noControlCharactersInRegex: no control character may reach the host's logger
    for (const line of running.logged) expect(line).to.not.match(/[\u0000-\u0008\u000b-\u001f\u007f]/);
  });

  it("the worker program is one-byte text (V8 would keep a two-byte copy, twice the size, in every worker)", async () => {
    const { source } = await workerProgram();
    const wide = [...source].findIndex((char) => (char.codePointAt(0) as number) > 0xff);
    expect(wide, wide < 0 ? "" : JSON.stringify(source.slice(wide - 40, wide + 10))).to.equal(-1);
  });

  it("plugin code cannot reach the worker program's shared memory: workerData holds no reference to it", async () => {
    const folder = harness.tempFolder();
    write(
      path.join(folder, "probe.ts"),
      `import { workerData } from "node:worker_threads";
import { definePlugin } from "context-host";
import Type from "typebox";

const found = Object.entries(workerData).filter(([, v]) => v instanceof SharedArrayBuffer || (typeof v === "object" && v !== null && "bytes" in v));
export default definePlugin({
  name: "probe",
  setup(api) {
    api.source({
      key: "probe/shared",
      schema: Type.String(),
      load: () => found.map(([k, v]) => k + ":" + (v instanceof SharedArrayBuffer ? v.byteLength : "object")).join(",") || "none",
      baseline: (v) => "shared " + v,
      update: (_previous, v) => "shared now " + v,
    });
  },
});
`,
    );
    const running = await harness.start({ folders: [folder], watch: false });
    // The progress cells (three 4-byte cells) are the only shared memory a plugin's worker holds.
    expect(/shared (\S+)/.exec(await baselineText(running))?.[1]).to.equal("progress:12");
  });

  it("in isolation none, plugin code runs on the host's own thread", async () => {
    const folder = harness.tempFolder();
    write(path.join(folder, "inline.ts"), threadPlugin({ name: "inline", tag: "inline" }));
    const running = await harness.start({ folders: [folder], watch: false, isolation: "none" });
    expect(threadOf(await baselineText(running), "inline")).to.equal(0);
  });
});

describe("Plugin workers: a stopped worker is restarted with the last good bundle", () => {
  const harness = usePluginHarness();

  it("a loader that exits the worker makes its source unavailable, is reported, and the plugin comes back on a new thread", async () => {
    const folder = harness.tempFolder();
    const trigger = path.join(harness.tempFolder("trigger-"), "exit-now");
    write(path.join(folder, "fragile.ts"), threadPlugin({ name: "fragile", tag: "fragile", trigger }));
    write(path.join(folder, "steady.ts"), textPlugin({ name: "steady", value: "fine" }));
    const running = await harness.start({ folders: [folder], watch: false });
    const first = threadOf(await baselineText(running), "fragile");

    fs.writeFileSync(trigger, "");
    // The boundary the worker died in: the fragile source is unavailable, the others are served.
    expect(await baselineText(running)).to.equal("steady: fine");
    const [stopped] = diagnosticsLike(running, { plugin: "fragile", phase: "load", key: "fragile/thread" });
    expect(stopped?.message).to.contain("exited with code 3").and.contain("restarting it with the last good generation");

    fs.rmSync(trigger);
    const text = await eventually(async () => {
      const baseline = await baselineText(running);
      return threadOf(baseline, "fragile") === undefined ? undefined : baseline;
    }, "the fragile plugin back");
    const second = threadOf(text, "fragile");
    expect(second).to.not.equal(first);
    // The same generation: the restart re-evaluated the last good bundle, not a new load.
    expect(generationOf(running, "fragile")).to.equal(1);
    expect(text).to.equal(`fragile on thread ${second}\n\nsteady: fine`);
    // Observed again without a fault: the stop is no longer a current problem.
    expect(running.host.diagnostics.length).to.be.greaterThan(0);
  });

  it("a plugin that stops three times within the window is disabled until its file changes", async () => {
    const folder = harness.tempFolder();
    const trigger = path.join(harness.tempFolder("trigger-"), "exit-now");
    fs.writeFileSync(trigger, "");
    const file = write(path.join(folder, "crashy.ts"), threadPlugin({ name: "crashy", tag: "crashy", trigger, exitCode: 7 }));
    const running = await harness.start({ folders: [folder], watch: false });
    for (let round = 0; round < 3; round++) {
      await eventually(
        async () => {
          await baselineText(running);
          return diagnosticsLike(running, { plugin: "crashy", phase: "load" }).length > round;
        },
        `stop ${round + 1}`,
      );
    }
    const messages = running.host.diagnostics.filter((d) => d.plugin === "crashy").map((d) => d.message);
    expect(messages.at(-1)).to.contain("exited with code 7").and.contain("stopped 3 times within 60 s and is disabled");
    // Disabled: boundaries do not restart it (no new generation, no new stop).
    for (let i = 0; i < 5; i++) expect(await baselineText(running)).to.equal("");
    expect(generationOf(running, "crashy")).to.equal(1);
    expect(running.host.diagnostics.filter((d) => d.plugin === "crashy")).to.have.length(3);

    fs.rmSync(trigger);
    write(file, threadPlugin({ name: "crashy", tag: "mended", trigger }));
    await running.host.reload(file);
    await eventually(async () => threadOf(await baselineText(running), "mended") !== undefined, "the mended plugin");
    expect(generationOf(running, "crashy")).to.equal(2);
  });

  it("waits longer between restarts each time (back-off)", async () => {
    const folder = harness.tempFolder();
    const trigger = path.join(harness.tempFolder("trigger-"), "exit-now");
    write(path.join(folder, "flaky.ts"), threadPlugin({ name: "flaky", tag: "flaky", trigger }));
    const running = await harness.start({ folders: [folder], watch: false, maxCrashes: 5 });
    const backAt: number[] = [];
    for (let round = 0; round < 3; round++) {
      fs.writeFileSync(trigger, "");
      await baselineText(running);
      const stoppedAt = performance.now();
      fs.rmSync(trigger);
      await eventually(async () => threadOf(await baselineText(running), "flaky") !== undefined, `restart ${round + 1}`);
      backAt.push(performance.now() - stoppedAt);
    }
    // 0 ms, then 250 ms, then 1 s before the worker is started again.
    expect(backAt[1]).to.be.at.least(240);
    expect(backAt[2]).to.be.at.least(990);
    expect(backAt[0]).to.be.below(backAt[2] as number);
  });
});

describe("Plugin workers: deadlines kept by the host's clock", () => {
  const harness = usePluginHarness();

  it("a loader stuck in a loop is stopped at its deadline; the diagnostic names plugin, phase, key and deadline", async () => {
    const folder = harness.tempFolder();
    write(
      path.join(folder, "spin.ts"),
      `import { definePlugin } from "context-host";
import Type from "typebox";

export default definePlugin({
  name: "spin",
  setup(api) {
    api.source({
      key: "spin/forever",
      schema: Type.String(),
      deadlineMs: 150,
      load: () => {
        for (;;) {}
      },
      baseline: (value) => value,
      update: (_previous, value) => value,
    });
  },
});
`,
    );
    write(path.join(folder, "calm.ts"), textPlugin({ name: "calm", value: "here" }));
    const running = await harness.start({ folders: [folder], watch: false, renderDeadlineMs: 100 });
    // The boundary is served; which deadline stopped the loader is what its diagnostic says.
    expect(await baselineText(running)).to.equal("calm: here");
    const [missed] = diagnosticsLike(running, { plugin: "spin", phase: "load", key: "spin/forever" });
    expect(missed?.message).to.contain("loader spin/forever missed its deadline of 150 ms");
  });

  it("a loader stuck after others of its plugin loaded is the one named: the progress cells move with each source", async () => {
    const folder = harness.tempFolder();
    write(
      path.join(folder, "third.ts"),
      `import { definePlugin } from "context-host";
import Type from "typebox";

export default definePlugin({
  name: "third",
  setup(api) {
    for (const name of ["first", "second"]) {
      api.source({
        key: "third/" + name,
        schema: Type.String(),
        load: () => name,
        baseline: (value) => value,
        update: (_previous, value) => value,
      });
    }
    api.source({
      key: "third/stuck",
      schema: Type.String(),
      deadlineMs: 150,
      load: () => {
        for (;;) {}
      },
      baseline: (value) => value,
      update: (_previous, value) => value,
    });
  },
});
`,
    );
    const running = await harness.start({ folders: [folder], watch: false, renderDeadlineMs: 100 });
    // The worker is stopped in the middle of the plugin's one request: none of its sources is in this baseline.
    expect(await baselineText(running)).to.equal("");
    const [missed] = diagnosticsLike(running, { plugin: "third", phase: "load", key: "third/stuck" });
    expect(missed?.message).to.contain("loader third/stuck missed its deadline of 150 ms");
    expect(diagnosticsLike(running, { plugin: "third", key: "third/first" })).to.deep.equal([]);
  });

  it("setups of several stuck plugins run concurrently: start-up costs one deadline, not one per plugin", async () => {
    const folder = harness.tempFolder();
    const marks = harness.tempFolder("marks-");
    for (const name of ["stuck-a", "stuck-b", "stuck-c"]) {
      // Each setup notes when it began (the wall clock all threads share), then never returns.
      write(
        path.join(folder, `${name}.ts`),
        `import { writeFileSync } from "node:fs";
import { definePlugin } from "context-host";
export default definePlugin({ name: ${JSON.stringify(name)}, setup() {
  writeFileSync(${JSON.stringify(path.join(marks, `${name}.txt`))}, String(Date.now()));
  for (;;) {}
} });
`,
      );
    }
    write(path.join(folder, "fine.ts"), textPlugin({ name: "fine", value: "ok" }));
    // A deadline long enough that a busy machine starts every worker within it (CI machines are busy).
    const running = await harness.start({ folders: [folder], watch: false, setupDeadlineMs: 2000 });
    // Overlap, not speed: every stuck setup began before the first could have missed its
    // deadline, so they were stuck at the same time (one after another, each would begin
    // only after the one before it was stopped, 2,000 ms or more later).
    const began = ["stuck-a", "stuck-b", "stuck-c"].map((name) =>
      Number(fs.readFileSync(path.join(marks, `${name}.txt`), "utf8")),
    );
    expect(Math.max(...began) - Math.min(...began)).to.be.below(2000);
    expect(await baselineText(running), JSON.stringify(running.host.diagnostics)).to.equal("fine: ok");
    for (const name of ["stuck-a", "stuck-b", "stuck-c"]) {
      const failed = running.host.failures().find((f) => f.file.endsWith(`${name}.ts`));
      expect(failed?.diagnostic.phase).to.equal("setup");
      expect(failed?.diagnostic.message).to.contain("setup missed its deadline of 2000 ms");
    }
  });

  it("a disposer that never settles does not block the reload or close: the worker is stopped at the dispose deadline", async () => {
    const folder = harness.tempFolder();
    const plugin = (value: string) => `import { definePlugin } from "context-host";
import Type from "typebox";

export default definePlugin({
  name: "sticky",
  setup(api) {
    setInterval(() => {}, 1000);
    api.onDispose(() => new Promise(() => {}));
    api.source({
      key: "sticky/value",
      schema: Type.String(),
      load: () => ${JSON.stringify(value)},
      baseline: (value) => value,
      update: (_previous, value) => value,
    });
  },
});
`;
    const file = write(path.join(folder, "sticky.ts"), plugin("one"));
    const running = await harness.start({ folders: [folder], watch: false, disposeDeadlineMs: 200 });
    write(file, plugin("two"));
    await running.host.reload(file);
    expect(generationOf(running, "sticky")).to.equal(2);
    const [missed] = diagnosticsLike(running, { plugin: "sticky", phase: "dispose" });
    expect(missed?.message).to.contain("missed its deadline of 200 ms");
    // The restarted worker brought generation 2 back.
    await eventually(async () => (await baselineText(running)) === "two", "generation 2 served again");
    // Closing runs generation 2's disposer, which never settles either: close returns (else
    // the test's own timeout fires) once the dispose deadline has fired for it too.
    const before = diagnosticsLike(running, { plugin: "sticky", phase: "dispose" }).length;
    await running.host.close();
    const after = diagnosticsLike(running, { plugin: "sticky", phase: "dispose" });
    expect(after.length).to.be.above(before);
    expect(after.at(-1)?.message).to.contain("missed its deadline of 200 ms");
  });
});
