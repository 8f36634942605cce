// Ambient instructions through a real host on real folder trees: the global file, then
// `AGENTS.md` from the project root down to the session's location; a changed file is
// re-sent complete and supersedes its earlier version; a removed one no longer applies;
// the discovery switch (setting or environment variable) leaves only the global file.

import { rmSync } from "node:fs";
import path from "node:path";
import { expect } from "chai";
import { projectInstructionsKey } from "../../core/sources/instructions/key.ts";
import { disableDiscoveryVariable } from "../../core/sources/instructions/service.ts";
import {
  baselineOf,
  hostsPerTest,
  instructionSections,
  markProjectRoot,
  systemUpdates,
  type TestHostOptions,
  turn,
  writeTree,
} from "./harness.ts";

describe("instruction service: ambient instruction files", () => {
  const { tree, startSession } = hostsPerTest("instr");
  let root: string;
  let globalFile: string;
  const originalSwitch = process.env[disableDiscoveryVariable];

  beforeEach(() => {
    delete process.env[disableDiscoveryVariable];
    root = path.join(tree.path, "project");
    globalFile = path.join(tree.path, "config", "AGENTS.md");
    markProjectRoot(root);
    writeTree(tree.path, {
      "config/AGENTS.md": "global rules",
      "AGENTS.md": "above the project root: never read",
      "project/AGENTS.md": "root rules",
      "project/a/AGENTS.md": "a rules",
      "project/a/b/AGENTS.md": "b rules",
      "project/a/b/c/AGENTS.md": "below the location: not ambient",
      "project/other/AGENTS.md": "a sibling folder: not ambient",
    });
  });

  afterEach(() => {
    if (originalSwitch === undefined) delete process.env[disableDiscoveryVariable];
    else process.env[disableDiscoveryVariable] = originalSwitch;
  });

  /** A session in `location` on a host reading this test's global instruction file. */
  function start(location: string, options: Omit<TestHostOptions, "providers"> = {}) {
    return startSession(location, [], { ...options, instructions: { globalFile, ...options.instructions } });
  }

  it("the Baseline carries the global file, then AGENTS.md from the project root down to the location, after the date and environment", async () => {
    const { host, id } = await start(path.join(root, "a", "b"));
    const baseline = baselineOf(await turn(host, id, "hello"));
    expect(instructionSections(baseline)).to.deep.equal([
      `${globalFile}: global rules`,
      "AGENTS.md: root rules",
      "a/AGENTS.md: a rules",
      "a/b/AGENTS.md: b rules",
    ]);
    expect(baseline.indexOf("<environment>")).to.be.lessThan(baseline.indexOf("Instructions from "));
    expect(baseline).to.not.contain("never read").and.to.not.contain("not ambient");
  });

  it("the instruction namespace belongs to the host: a plugin claiming it is rejected, and sessions keep composing", async () => {
    writeTree(tree.path, {
      "plugins/instructions.ts": `import { definePlugin } from "context-host";
import Type from "typebox";
export default definePlugin({ name: "instructions", setup(api) {
  api.source({ key: "instructions/project", schema: Type.String(), load: () => "forged", baseline: (v) => v, update: (_p, v) => v });
} });`,
    });
    const { host, id } = await start(root, { plugins: [path.join(tree.path, "plugins")] });
    const baseline = baselineOf(await turn(host, id, "hello"));
    expect(instructionSections(baseline)).to.deep.equal([`${globalFile}: global rules`, "AGENTS.md: root rules"]);
    expect(baseline).not.to.contain("forged");
    const diagnostic = host.diagnostics.find((d) => d.phase === "namespace");
    expect(diagnostic?.message).to.match(/"instructions" is reserved/);
    expect(host.plugins()).to.deep.equal([]);
  });

  it("each file has a stable key from its project-relative folder", () => {
    expect(projectInstructionsKey("")).to.equal("instructions/project");
    expect(projectInstructionsKey("a/b")).to.equal("instructions/project/a/b");
    expect(projectInstructionsKey(path.join("a", "b"))).to.equal(projectInstructionsKey("a/b"));
    // Folders a key cannot spell keep distinct, valid keys.
    const upper = projectInstructionsKey("Docs");
    const lower = projectInstructionsKey("docs");
    expect(upper).to.not.equal(lower);
    expect(upper).to.match(/^instructions\/project\/[a-z0-9][a-z0-9._/-]*$/);
  });

  it("a changed file emits its complete current contents, saying it supersedes the earlier version", async () => {
    const { host, id } = await start(path.join(root, "a", "b"));
    await turn(host, id, "one");
    writeTree(root, { "a/AGENTS.md": "a rules, revised\n\nwith a second paragraph" });
    const request = await turn(host, id, "two");
    const expected =
      "The instructions from a/AGENTS.md have changed. This complete current version supersedes the earlier one:\n\n" +
      "a rules, revised\n\nwith a second paragraph";
    expect(request.messages.slice(-2)).to.deep.equal([
      { role: "user", text: "two" },
      { role: "system-update", text: expected },
    ]);
    expect(await systemUpdates(host, id)).to.deep.equal([expected]);

    // Unchanged content emits nothing more.
    await turn(host, id, "three");
    expect(await systemUpdates(host, id)).to.have.length(1);
  });

  it("a change of the global file is admitted the same way", async () => {
    const { host, id } = await start(root);
    await turn(host, id, "one");
    writeTree(tree.path, { "config/AGENTS.md": "global rules v2" });
    await turn(host, id, "two");
    expect(await systemUpdates(host, id)).to.deep.equal([
      `The instructions from ${globalFile} have changed. This complete current version supersedes the earlier one:\n\nglobal rules v2`,
    ]);
  });

  it("when one of several files is removed, only its 'no longer apply' text is emitted", async () => {
    const { host, id } = await start(path.join(root, "a", "b"));
    await turn(host, id, "one");
    rmSync(path.join(root, "a", "AGENTS.md"));
    const request = await turn(host, id, "two");
    expect(request.messages.at(-1)).to.deep.equal({
      role: "system-update",
      text: "The instructions from a/AGENTS.md no longer apply.",
    });
    // A file that comes back is introduced again with its contents.
    writeTree(root, { "a/AGENTS.md": "a rules again" });
    await turn(host, id, "three");
    expect(await systemUpdates(host, id)).to.deep.equal([
      "The instructions from a/AGENTS.md no longer apply.",
      "Instructions from a/AGENTS.md:\n\na rules again",
    ]);
  });

  it("when every file is removed, one message says each of them no longer applies", async () => {
    const { host, id } = await start(path.join(root, "a", "b"));
    await turn(host, id, "one");
    for (const file of ["AGENTS.md", "a/AGENTS.md", "a/b/AGENTS.md"]) rmSync(path.join(root, file));
    rmSync(globalFile);
    await turn(host, id, "two");
    const updates = await systemUpdates(host, id);
    expect(updates).to.have.length(1);
    // Removal texts come in lexicographic key order (instructions/global, instructions/project, …/a, …/a/b).
    expect((updates[0] ?? "").split("\n\n")).to.deep.equal([
      `The instructions from ${globalFile} no longer apply.`,
      "The instructions from AGENTS.md no longer apply.",
      "The instructions from a/AGENTS.md no longer apply.",
      "The instructions from a/b/AGENTS.md no longer apply.",
    ]);
    await turn(host, id, "three");
    expect(await systemUpdates(host, id)).to.have.length(1);
  });

  it("the discovery setting turned off leaves only the global file", async () => {
    const { host, id } = await start(path.join(root, "a", "b"), { instructions: { discovery: false } });
    const baseline = baselineOf(await turn(host, id, "hello"));
    expect(instructionSections(baseline)).to.deep.equal([`${globalFile}: global rules`]);
  });

  it("the environment variable turns discovery off too, and the global file stays eligible", async () => {
    process.env[disableDiscoveryVariable] = "1";
    const { host, id } = await start(path.join(root, "a", "b"));
    const baseline = baselineOf(await turn(host, id, "hello"));
    expect(instructionSections(baseline)).to.deep.equal([`${globalFile}: global rules`]);
    // With discovery off, project files never become effective later either.
    writeTree(root, { "a/b/AGENTS.md": "b rules, revised" });
    await turn(host, id, "two");
    expect(await systemUpdates(host, id)).to.deep.equal([]);
  });

  it("an environment variable that does not say off leaves discovery on", async () => {
    process.env[disableDiscoveryVariable] = "0";
    const { host, id } = await start(root);
    expect(instructionSections(baselineOf(await turn(host, id, "hello")))).to.include("AGENTS.md: root rules");
  });

  it("no global file (globalFile: false) and a missing one are both simply absent", async () => {
    const none = await start(root, { instructions: { globalFile: false } });
    expect(instructionSections(baselineOf(await turn(none.host, none.id, "hello")))).to.deep.equal(["AGENTS.md: root rules"]);
    rmSync(globalFile);
    const missing = await start(root);
    expect(instructionSections(baselineOf(await turn(missing.host, missing.id, "hello")))).to.deep.equal([
      "AGENTS.md: root rules",
    ]);
    expect(missing.host.diagnostics).to.deep.equal([]);
  });
});
