// The plugin set's diagnostics: source faults count up in the one channel and leave its
// current view once the source loads again; each swap closes only what it displaced.

import fs from "node:fs";
import path from "node:path";
import { expect } from "chai";
import { Diagnostics, formatDiagnostic } from "../../core/base/diagnostics.ts";
import { baselineOf, logLines, textPlugin, usePluginHarness, write } from "./harness.ts";

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
