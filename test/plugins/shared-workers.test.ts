// Plugins beyond the dedicated workers share worker threads, each in its own realm
// (decision 185): every plugin of a shared worker answers, what one changes in its realm
// its thread mates never see, and one that loops is stopped at its deadline with its whole
// thread; its mates come back on a new thread, told why, and the culprit runs alone.

import fs from "node:fs";
import path from "node:path";
import { expect } from "chai";
import { createHost } from "../../core/host/host.ts";
import { scriptedProvider } from "../../core/providers/scripted.ts";
import * as SystemContext from "../../core/system-context.ts";
import { baselineOf, diagnosticsLike, eventually, type RunningHost, usePluginHarness, write } from "./harness.ts";

/** A plugin whose source says its name, the thread its loader runs on, and `probe`'s value there. */
function threadPlugin(name: string, options: { top?: string; probe?: string; loopWhen?: string } = {}): string {
  const loop = options.loopWhen === undefined ? "" : `if (existsSync(${JSON.stringify(options.loopWhen)})) for (;;) {}`;
  return `import { existsSync } from "node:fs";
import { threadId } from "node:worker_threads";
import { definePlugin } from "context-host";
import Type from "typebox";

${options.top ?? ""}
export default definePlugin({
  name: ${JSON.stringify(name)},
  setup(api) {
    api.source({
      key: ${JSON.stringify(`${name}/thread`)},
      schema: Type.String(),
      deadlineMs: 150,
      load: () => {
        ${loop}
        return "${name} on thread " + threadId + " sees " + (${options.probe ?? '"-"'});
      },
      baseline: (value) => value,
      update: (_previous, value) => value,
    });
  },
});
`;
}

/** Each plugin's thread, and what it saw, from a Baseline's text. */
async function seen(running: RunningHost): Promise<Map<string, { thread: number; sees: string }>> {
  const text = (await baselineOf(running)).baseline;
  return new Map(
    [...text.matchAll(/(\w+) on thread (\d+) sees (.*)/g)].map((m) => [
      m[1] as string,
      { thread: Number(m[2]), sees: m[3] as string },
    ]),
  );
}

describe("Plugin workers: plugins beyond the bound share workers, each in its realm", () => {
  const harness = usePluginHarness();

  it("plugins beyond dedicatedWorkers share one worker thread and each answers from it", async () => {
    const folder = harness.tempFolder();
    for (const name of ["one", "two", "three", "four"]) write(path.join(folder, `${name}.ts`), threadPlugin(name));
    const running = await harness.start({ folders: [folder], watch: false, dedicatedWorkers: 1, pluginsPerWorker: 3 });
    const threads = await seen(running);
    expect([...threads.keys()].sort()).to.deep.equal(["four", "one", "three", "two"]);
    const counts = new Map<number, number>();
    for (const { thread } of threads.values()) counts.set(thread, (counts.get(thread) ?? 0) + 1);
    // One plugin on a worker of its own, three on one shared worker; none on the host's thread.
    expect([...counts.values()].sort()).to.deep.equal([1, 3]);
    expect(counts.has(0)).to.equal(false);
  });

  it("a plugin's globals and built-in prototypes never reach another plugin of its thread, nor the thread's port", async () => {
    const folder = harness.tempFolder();
    write(
      path.join(folder, "polluter.ts"),
      threadPlugin("polluter", {
        top: `(globalThis as Record<string, unknown>).leaked = "INJECTED";
(Object.prototype as Record<string, unknown>).injected = "INJECTED";
Array.prototype.join = () => "INJECTED";
JSON.stringify = () => "INJECTED";`,
        probe: `(globalThis as Record<string, unknown>).leaked`,
      }),
    );
    write(
      path.join(folder, "reader.ts"),
      threadPlugin("reader", {
        top: `import { parentPort } from "node:worker_threads";
console.log("reader printed", { in: "its realm" });`,
        probe: `[typeof (globalThis as Record<string, unknown>).leaked, String(({} as Record<string, unknown>).injected), [1, 2].join("-"), JSON.stringify({ a: 1 }), String(parentPort)].join(" ")`,
      }),
    );
    const running = await harness.start({ folders: [folder], watch: false, dedicatedWorkers: 0, pluginsPerWorker: 4 });
    const threads = await seen(running);
    expect(threads.get("polluter")?.sees).to.equal("INJECTED");
    expect(threads.get("reader")?.thread).to.equal(threads.get("polluter")?.thread);
    // No port to the host: a plugin cannot read or answer its thread mates' requests.
    expect(threads.get("reader")?.sees).to.equal('undefined undefined 1-2 {"a":1} null');
    // What it prints reaches the host's logger as its own line.
    expect(running.logged).to.include("info reader printed { in: 'its realm' }");
  });

  it("a plugin in a shared worker compares its new value with the admitted one sent from the host's realm", async () => {
    const folder = harness.tempFolder();
    const state = path.join(harness.tempFolder("state-"), "n");
    fs.writeFileSync(state, "1");
    write(
      path.join(folder, "counter.ts"),
      `import { readFileSync } from "node:fs";
import { definePlugin } from "context-host";
import Type from "typebox";

export default definePlugin({
  name: "counter",
  setup(api) {
    api.source({
      key: "counter/n",
      schema: Type.Object({ n: Type.Integer(), tags: Type.Array(Type.String()) }),
      load: () => ({ n: Number(readFileSync(${JSON.stringify(state)}, "utf8")), tags: ["a"] }),
      baseline: (value) => "count " + value.n,
      update: (previous, value) => "count " + previous.n + " -> " + value.n,
    });
  },
});
`,
    );
    write(path.join(folder, "mate.ts"), threadPlugin("mate"));
    const running = await harness.start({ folders: [folder], watch: false, dedicatedWorkers: 0, pluginsPerWorker: 2 });
    const compose = () => running.registry.compose({ location: running.location });
    const first = await baselineOf(running);
    expect(first.baseline).to.contain("count 1");
    const same = await SystemContext.reconcile(await compose(), first.snapshot);
    expect(same.kind).to.equal("unchanged");
    fs.writeFileSync(state, "2");
    const changed = await SystemContext.reconcile(await compose(), first.snapshot);
    expect(changed.kind === "updated" ? changed.text : changed.kind).to.contain("count 1 -> 2");
    expect(diagnosticsLike(running, { plugin: "counter" })).to.deep.equal([]);
  });

  it("a plugin looping forever stops its shared worker at its deadline; its mates restart, told why, and the looping plugin runs alone", async () => {
    const folder = harness.tempFolder();
    const trigger = path.join(harness.tempFolder("trigger-"), "loop-now");
    const spin = write(path.join(folder, "spin.ts"), threadPlugin("spin", { loopWhen: trigger }));
    for (const name of ["mate", "other"]) write(path.join(folder, `${name}.ts`), threadPlugin(name));
    const running = await harness.start({
      folders: [folder],
      watch: false,
      dedicatedWorkers: 0,
      pluginsPerWorker: 3,
      renderDeadlineMs: 100,
    });
    const before = await seen(running);
    const shared = before.get("spin")?.thread;
    expect([before.get("mate")?.thread, before.get("other")?.thread]).to.deep.equal([shared, shared]);

    fs.writeFileSync(trigger, "");
    await seen(running);
    fs.rmSync(trigger);
    const [missed] = diagnosticsLike(running, { plugin: "spin", phase: "load", key: "spin/thread" });
    expect(missed?.message).to.contain("missed its deadline").and.contain("restarting it with the last good generation");
    for (const name of ["mate", "other"]) {
      const messages = running.host.diagnostics.filter((d) => d.plugin === name).map((d) => d.message);
      expect(messages.join("\n"))
        .to.contain(
          "the worker this plugin shares with others (plugins beyond the dedicated workers share them) was stopped for another plugin",
        )
        .and.contain(spin)
        .and.contain("missed its deadline")
        .and.contain("restarting it with the last good generation");
    }

    const after = await eventually(async () => {
      const threads = await seen(running);
      return threads.size === 3 ? threads : undefined;
    }, "every plugin active again");
    const mates = after.get("mate")?.thread;
    expect(after.get("other")?.thread).to.equal(mates);
    expect(mates).to.not.equal(shared);
    // The plugin that stopped its shared worker now has a worker of its own.
    expect(after.get("spin")?.thread).to.not.be.oneOf([shared, mates]);
  });

  it("stops for another plugin are not the plugin's own: a mate outlives three culprits within the crash window", async () => {
    const folder = harness.tempFolder();
    const triggers = harness.tempFolder("triggers-");
    const culprits = ["a", "b", "c"];
    for (const name of culprits) {
      write(path.join(folder, `${name}.ts`), threadPlugin(name, { loopWhen: path.join(triggers, name) }));
    }
    write(path.join(folder, "mate.ts"), threadPlugin("mate"));
    const running = await harness.start({
      folders: [folder],
      watch: false,
      dedicatedWorkers: 0,
      pluginsPerWorker: 4,
      renderDeadlineMs: 100,
      maxCrashes: 3,
    });
    expect(new Set([...(await seen(running)).values()].map((s) => s.thread)).size).to.equal(1);
    for (const name of culprits) {
      fs.writeFileSync(path.join(triggers, name), "");
      await seen(running);
      fs.rmSync(path.join(triggers, name));
      await eventually(async () => ((await seen(running)).size === 4 ? true : undefined), `every plugin active after ${name}`);
    }
    const mate = running.host.diagnostics.filter((d) => d.plugin === "mate").map((d) => d.message);
    expect(mate).to.have.length(3);
    for (const message of mate) {
      expect(message).to.contain("was stopped for another plugin").and.not.contain("disabled").and.not.contain("stop 3");
    }
  });

  it("createHost takes dedicatedWorkers and pluginsPerWorker to its plugins", async () => {
    const folder = harness.tempFolder();
    for (const name of ["one", "two", "three"]) write(path.join(folder, `${name}.ts`), threadPlugin(name));
    const provider = scriptedProvider();
    const host = await createHost({
      dataDir: path.join(folder, ".data"),
      providers: { scripted: provider },
      plugins: [folder],
      builtins: false,
      watch: false,
      onDiagnostic: false,
      dedicatedWorkers: 0,
      pluginsPerWorker: 3,
    });
    try {
      const id = await host.createSession({ location: folder, provider: "scripted", model: "m" });
      await host.prompt(id, "which threads?");
      await host.step(id);
      const baseline = provider.requests[0]?.system.at(-1) ?? "";
      const threads = [...baseline.matchAll(/(\w+) on thread (\d+)/g)].map((m) => Number(m[2]));
      expect(threads).to.have.length(3);
      expect(new Set(threads).size).to.equal(1);
    } finally {
      await host.close();
    }
  });
});
