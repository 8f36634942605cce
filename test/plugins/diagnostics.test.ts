// The plugin set's diagnostics: source faults count up in the one channel and leave its
// current view once the source loads again; each swap closes only what it displaced.

import fs from "node:fs";
import path from "node:path";
import { expect } from "chai";
import { Diagnostics, formatDiagnostic } from "../../core/base/diagnostics.ts";
import { baselineOf, eventually, generationOf, logLines, textPlugin, usePluginHarness, write } from "./harness.ts";

/** A plugin whose loader throws while `flag` holds "broken" and returns its text otherwise. */
function flakyPlugin(flag: string): string {
  return `import { readFileSync } from "node:fs";
import { definePlugin } from "context-host";
import Type from "typebox";

export default definePlugin({
  name: "flaky",
  setup(api) {
    api.source({
      key: "flaky/status",
      schema: Type.String(),
      load: () => {
        const text = readFileSync(${JSON.stringify(flag)}, "utf8");
        if (text === "broken") throw new Error("the flag says broken");
        return text;
      },
      baseline: (value) => "flaky: " + value,
      update: (_previous, value) => "flaky is now " + value,
    });
  },
});
`;
}

describe("Plugin set: diagnostics of source faults", () => {
  const harness = usePluginHarness();

  it("a loader fault repeated at every boundary is one record that counts up, not one per boundary", async () => {
    const folder = harness.tempFolder();
    const flag = write(path.join(folder, "flag.txt"), "broken");
    write(path.join(folder, "flaky.ts"), flakyPlugin(flag));
    const diagnostics = new Diagnostics();
    const running = await harness.start({ folders: [folder], watch: false, diagnostics });
    for (let i = 0; i < 3; i++) await baselineOf(running);
    const records = diagnostics.records().filter((r) => r.diagnostic.key === "flaky/status");
    expect(records.map((r) => [r.diagnostic.phase, r.count])).to.deep.equal([["load", 3]]);
  });

  it("a source's loader fault leaves the current view once the source loads again, and stays in the history", async () => {
    const folder = harness.tempFolder();
    const flag = write(path.join(folder, "flag.txt"), "broken");
    write(path.join(folder, "flaky.ts"), flakyPlugin(flag));
    const diagnostics = new Diagnostics();
    const running = await harness.start({ folders: [folder], watch: false, diagnostics });
    await baselineOf(running);
    expect(diagnostics.current().map((d) => [d.key, d.phase])).to.deep.equal([["flaky/status", "load"]]);
    fs.writeFileSync(flag, "fine");
    expect((await baselineOf(running)).baseline).to.equal("flaky: fine");
    expect(diagnostics.current()).to.deep.equal([]);
    expect(diagnostics.history.map((d) => d.key)).to.deep.equal(["flaky/status"]);
    fs.writeFileSync(flag, "broken");
    await baselineOf(running);
    expect(diagnostics.current().map((d) => [d.key, d.phase])).to.deep.equal([["flaky/status", "load"]]);
  });

  it("reloading one plugin closes its own previous generation and no other plugin's", async () => {
    const folder = harness.tempFolder();
    const log = path.join(folder, "lifecycle.log");
    const one = write(path.join(folder, "one.ts"), textPlugin({ name: "one", value: "1", log }));
    write(path.join(folder, "two.ts"), textPlugin({ name: "two", value: "2", log }));
    // The order of the first setups is asserted: in-process they run one after another (isolated
    // setups run concurrently, each in its own worker).
    const running = await harness.start({ folders: [folder], watch: false, isolation: "none" });
    write(one, textPlugin({ name: "one", value: "1b", log }));
    await running.host.reload(one);
    expect(logLines(log)).to.deep.equal(["setup 1", "setup 2", "setup 1b", "dispose 1"]);
    expect((await baselineOf(running)).baseline).to.equal("one: 1b\n\ntwo: 2");
  });
});

describe("Plugin set: current diagnostics of a namespace contest", () => {
  const harness = usePluginHarness();
  const namespaceProblems = (diagnostics: Diagnostics) =>
    diagnostics
      .current()
      .filter((d) => d.phase === "namespace")
      .map((d) => [path.basename(d.file), d.message.replace(/^.*; /, "")]);

  it("the loser's problem stays current while the winner reloads, and clears once the loser is fixed", async () => {
    const folder = harness.tempFolder();
    // The path that sorts first keeps the namespace: a.ts wins, b.ts loses.
    const a = write(path.join(folder, "a.ts"), textPlugin({ name: "same", value: "a1" }));
    const b = write(path.join(folder, "b.ts"), textPlugin({ name: "same", value: "b1" }));
    const diagnostics = new Diagnostics();
    const running = await harness.start({ folders: [folder], watch: false, isolation: "none", diagnostics });
    expect(namespaceProblems(diagnostics)).to.deep.equal([["b.ts", `${b} is not loaded (the path that sorts first keeps it)`]]);

    write(a, textPlugin({ name: "same", value: "a2" }));
    await running.host.reload(a);
    await running.host.settled();
    expect((await baselineOf(running)).baseline).to.equal("same: a2");
    expect(namespaceProblems(diagnostics)).to.deep.equal([["b.ts", `${b} is not loaded (the path that sorts first keeps it)`]]);

    write(b, textPlugin({ name: "other", value: "b2" }));
    await running.host.reload(b);
    await running.host.settled();
    expect((await baselineOf(running)).baseline)
      .to.contain("same: a2")
      .and.to.contain("other: b2");
    expect(diagnostics.current()).to.deep.equal([]);
    expect(diagnostics.history.filter((d) => d.phase === "namespace")).to.have.length(1);
  });

  it("a displaced holder's problem stays current while it is unloaded, and clears once it is fixed", async () => {
    const folder = harness.tempFolder();
    const a = write(path.join(folder, "a.ts"), textPlugin({ name: "first", value: "a1" }));
    const b = write(path.join(folder, "b.ts"), textPlugin({ name: "same", value: "b1" }));
    const diagnostics = new Diagnostics();
    const running = await harness.start({ folders: [folder], watch: false, isolation: "none", diagnostics });
    expect(diagnostics.current()).to.deep.equal([]);

    // a.ts takes b.ts's name: its path sorts first, so it takes the namespace and b.ts is unloaded
    // (b.ts may try again at once and be refused: that problem is b.ts's too).
    write(a, textPlugin({ name: "same", value: "a2" }));
    await running.host.reload(a);
    await running.host.settled();
    expect((await baselineOf(running)).baseline).to.equal("same: a2");
    const unloaded = ["b.ts", `${b} is unloaded`];
    expect(namespaceProblems(diagnostics)).to.deep.include(unloaded);
    expect(diagnostics.current().map((d) => d.file)).to.satisfy((files: string[]) => files.every((file) => file === b));

    write(a, textPlugin({ name: "same", value: "a3" }));
    await running.host.reload(a);
    await running.host.settled();
    expect(namespaceProblems(diagnostics)).to.deep.include(unloaded);

    write(b, textPlugin({ name: "other", value: "b2" }));
    await running.host.reload(b);
    await running.host.settled();
    expect((await baselineOf(running)).baseline)
      .to.contain("same: a3")
      .and.to.contain("other: b2");
    expect(diagnostics.current()).to.deep.equal([]);
  });

  for (const isolation of ["none", "worker"] as const)
    it(`a displaced holder whose disposer throws has its dispose fault under its own file, not the winner's (isolation ${isolation})`, async () => {
      const folder = harness.tempFolder();
      const a = write(path.join(folder, "a.ts"), textPlugin({ name: "first", value: "a1" }));
      const b = write(
        path.join(folder, "b.ts"),
        `import { definePlugin } from "context-host";
import Type from "typebox";

export default definePlugin({
  name: "same",
  setup(api) {
    api.onDispose(() => {
      throw new Error("the holder cannot let go");
    });
    api.source({
      key: "same/status",
      schema: Type.String(),
      load: () => "b1",
      baseline: (value) => "same: " + value,
      update: (_previous, value) => "same is now " + value,
    });
  },
});
`,
      );
      const diagnostics = new Diagnostics();
      const running = await harness.start({ folders: [folder], watch: false, isolation, diagnostics });
      expect(diagnostics.current()).to.deep.equal([]);

      // a.ts takes b.ts's name (its path sorts first): b.ts's generation is closed, and its disposer throws.
      write(a, textPlugin({ name: "same", value: "a2" }));
      await running.host.reload(a);
      await running.host.settled();
      expect((await baselineOf(running)).baseline).to.equal("same: a2");
      // (b.ts, revived at once, may load again and be refused: that generation's disposer throws under b.ts too.)
      const disposeFaults = diagnostics.history.filter((d) => d.phase === "dispose");
      expect(disposeFaults).to.not.be.empty;
      for (const fault of disposeFaults) {
        expect([path.basename(fault.file), fault.plugin]).to.deep.equal(["b.ts", "same"]);
        expect(fault.message).to.contain("the holder cannot let go");
      }
      expect(diagnostics.current().map((d) => d.file)).to.satisfy((files: string[]) => files.every((file) => file === b));
    });
});

describe("Plugin set: diagnostics printed to a terminal", () => {
  it("control characters in a plugin's message, key, name and line are escaped, so plugin text cannot forge terminal output", () => {
    const printed = formatDiagnostic(
      {
        origin: "plugin",
        plugin: "evil\u001b[2J",
        file: "/plugins/evil.ts",
        line: 2,
        column: 0,
        key: "evil/x\r",
        phase: "load",
        message: "boom\u001b[31m\nFAKE host line\u0007\ud800",
        lineText: "\tthrow x;\u009b",
      },
      "/plugins",
    );
    expect(printed).to.equal(
      "evil.ts:2:1 [evil\\u{1b}[2J load evil/x\\u{d}] boom\\u{1b}[31m\\u{a}FAKE host line\\u{7}\\u{d800}\n2 | \tthrow x;\\u{9b}\n  | ^",
    );
    expect(printed.split("\n")).to.have.length(3);
  });
});

describe("Plugin set: settings for a plugin that is not there", () => {
  const harness = usePluginHarness();

  it("pluginSettings naming no plugin (a typo) is a warning naming the plugins there are", async () => {
    const folder = harness.tempFolder();
    write(path.join(folder, "todos.ts"), textPlugin({ name: "todos", value: "3 open" }));
    write(path.join(folder, "weather.ts"), textPlugin({ name: "weather", value: "clear" }));
    const diagnostics = new Diagnostics();
    await harness.start({ folders: [folder], watch: false, diagnostics, settings: { todo: { list: "x" }, weather: {} } });
    expect(diagnostics.current()).to.deep.equal([
      {
        origin: "plugin",
        plugin: "todo",
        file: "pluginSettings.todo",
        phase: "config",
        message: 'no plugin is named "todo", so these settings are not used (the plugins: todos, weather)',
      },
    ]);
  });

  it("the warning is resolved once a plugin of that name is there", async () => {
    const folder = harness.tempFolder();
    const diagnostics = new Diagnostics();
    const running = await harness.start({ folders: [folder], watch: true, debounceMs: 20, diagnostics, settings: { todos: {} } });
    expect(diagnostics.current().map((d) => d.message)).to.deep.equal([
      'no plugin is named "todos", so these settings are not used (there are no plugins)',
    ]);
    write(path.join(folder, "todos.ts"), textPlugin({ name: "todos", value: "3 open" }));
    await eventually(() => generationOf(running, "todos"), "todos to be active");
    expect(diagnostics.current()).to.deep.equal([]);
  });
});
