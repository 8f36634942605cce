// Nested instruction discovery through the `read` tool on real folder trees and a real
// SQLite data folder: a nested AGENTS.md joins the effective instructions and is admitted
// at the next Safe Provider-Turn Boundary (after the tool result, never before), stays
// active across restarts in the same location, is folded into the Baseline after
// compaction, and is re-resolved when the session moves.

import { rmSync } from "node:fs";
import path from "node:path";
import { expect } from "chai";
import { ContextHostError } from "../../core/base/errors.ts";
import { SqliteSessionStore, sessionsFile } from "../../core/session/store/sqlite.ts";
import { InstructionService, ProjectFileUnreadable } from "../../core/sources/instructions/service.ts";
import {
  baselineOf,
  hostsPerTest,
  instructionSections,
  markProjectRoot,
  readCall,
  requestOf,
  systemUpdates,
  type TestHostOptions,
  transcript,
  writeTree,
} from "./harness.ts";

const nestedText = "Instructions from pkg/AGENTS.md:\n\npkg rules";

describe("instruction service: nested discovery through the read tool", () => {
  const { data, tree, open, startSession, close } = hostsPerTest("disc");
  let root: string;

  beforeEach(() => {
    root = path.join(tree.path, "project");
    markProjectRoot(root);
    writeTree(root, {
      "AGENTS.md": "root rules",
      "pkg/AGENTS.md": "pkg rules",
      "pkg/src/main.ts": "export const main = 1;\n",
      "other/AGENTS.md": "other rules",
      "other/file.txt": "other file",
    });
  });

  /** A session in `location` whose first turn reads `file` through the tool; returns after the tool ran. */
  async function readInFirstTurn(file: string, location = root, options: Omit<TestHostOptions, "providers"> = {}) {
    const { host, provider, id } = await startSession(location, [readCall(file)], options);
    await host.prompt(id, "look at the code");
    const toolStep = requestOf(await host.step(id));
    return { host, provider, id, toolStep };
  }

  it("a nested AGENTS.md found by a read is admitted at the next boundary, after the tool result, and not before", async () => {
    const { host, id, toolStep } = await readInFirstTurn("pkg/src/main.ts");
    // The request of the step that ran the tool was built before the tool ran.
    expect(baselineOf(toolStep)).to.not.contain("pkg rules");
    expect(toolStep.messages.map((m) => m.role)).to.deep.equal(["user"]);
    // Nothing is pushed: durable history holds no update until the next boundary.
    expect(await systemUpdates(host, id)).to.deep.equal([]);

    const next = requestOf(await host.step(id));
    expect(transcript(next.messages)).to.deep.equal([
      "user: look at the code",
      "assistant: reading pkg/src/main.ts",
      "tool: export const main = 1;\n",
      `system-update: ${nestedText}`,
    ]);
    expect(baselineOf(next)).to.equal(baselineOf(toolStep));
    expect(await systemUpdates(host, id)).to.deep.equal([nestedText]);

    // Admitted once: later boundaries emit nothing for it.
    await host.prompt(id, "thanks");
    requestOf(await host.step(id));
    expect(await systemUpdates(host, id)).to.deep.equal([nestedText]);
  });

  it("a read joins the nested AGENTS.md to the effective instructions the instruction service returns for that session in that location", async () => {
    const store = new SqliteSessionStore(sessionsFile(data.path));
    try {
      const service = new InstructionService({ store, settings: { globalFile: false }, env: {} });
      for (const session of ["reader", "bystander"]) {
        await store.createSession({ id: session, location: root, provider: "scripted", model: "m" });
      }
      const effective = async (sessionId: string, location = root) =>
        (await service.effectiveFiles({ location, sessionId })).map((file) => `${file.key} ${file.shownAs}`);
      expect(await effective("reader")).to.deep.equal(["instructions/project AGENTS.md"]);

      expect(await service.projectFiles("reader", root).readFile("pkg/src/main.ts")).to.equal("export const main = 1;\n");
      expect(await effective("reader")).to.deep.equal([
        "instructions/project AGENTS.md",
        "instructions/project/pkg pkg/AGENTS.md",
      ]);
      // Only that session, only in that location.
      expect(await effective("bystander")).to.deep.equal(["instructions/project AGENTS.md"]);
      expect(await effective("reader", path.join(root, "other"))).to.deep.equal([
        "instructions/project AGENTS.md",
        "instructions/project/other other/AGENTS.md",
      ]);
    } finally {
      await store.close();
    }
  });

  it("a file the service cannot read rejects with ProjectFileUnreadable naming the file and why, and discovers nothing", async () => {
    const store = new SqliteSessionStore(sessionsFile(data.path));
    try {
      const service = new InstructionService({ store, settings: { globalFile: false }, env: {} });
      await store.createSession({ id: "reader", location: root, provider: "scripted", model: "m" });
      const files = service.projectFiles("reader", root);
      const missing = await files.readFile("pkg/gone.ts").catch((caught: unknown) => caught);
      expect(missing).to.be.instanceOf(ProjectFileUnreadable).and.instanceOf(ContextHostError);
      expect(missing).to.include({
        name: "ProjectFileUnreadable",
        file: "pkg/gone.ts",
        message: `cannot read pkg/gone.ts: no such file (${path.join(root, "pkg", "gone.ts")})`,
      });
      const outside = (await files.readFile("../elsewhere.md").catch((caught: unknown) => caught)) as ProjectFileUnreadable;
      expect(outside).to.be.instanceOf(ProjectFileUnreadable);
      expect(outside.file).to.equal("../elsewhere.md");
      expect(outside.message).to.match(/^cannot read \.\.\/elsewhere\.md: .*outside the project root/);
      expect(await store.discoveredInstructions("reader", root)).to.deep.equal([]);
    } finally {
      await store.close();
    }
  });

  it("every instruction file between the root and the read file is discovered, in folder order, in one message", async () => {
    writeTree(root, { "pkg/src/AGENTS.md": "src rules", "pkg/src/deep/x.ts": "x" });
    const { host, id } = await readInFirstTurn("pkg/src/deep/x.ts");
    requestOf(await host.step(id));
    expect(await systemUpdates(host, id)).to.deep.equal([`${nestedText}\n\nInstructions from pkg/src/AGENTS.md:\n\nsrc rules`]);
  });

  it("a discovered file is re-sent complete when it changes, and says it no longer applies when removed", async () => {
    const { host, id } = await readInFirstTurn("pkg/src/main.ts");
    requestOf(await host.step(id));
    writeTree(root, { "pkg/AGENTS.md": "pkg rules v2" });
    await host.prompt(id, "two");
    requestOf(await host.step(id));
    rmSync(path.join(root, "pkg", "AGENTS.md"));
    await host.prompt(id, "three");
    requestOf(await host.step(id));
    expect((await systemUpdates(host, id)).slice(1)).to.deep.equal([
      "The instructions from pkg/AGENTS.md have changed. This complete current version supersedes the earlier one:\n\npkg rules v2",
      "The instructions from pkg/AGENTS.md no longer apply.",
    ]);
  });

  it("a discovered file that disappears before the boundary reads it is absent: nothing admitted, no diagnostic; it returns when the file does", async () => {
    const { host, id } = await readInFirstTurn("pkg/src/main.ts");
    rmSync(path.join(root, "pkg", "AGENTS.md"));
    const next = requestOf(await host.step(id));
    expect(next.messages.map((m) => m.role)).to.not.include("system-update");
    expect(host.diagnostics).to.deep.equal([]);

    writeTree(root, { "pkg/AGENTS.md": "pkg rules" });
    await host.prompt(id, "again");
    requestOf(await host.step(id));
    expect(await systemUpdates(host, id)).to.deep.equal([nestedText]);
  });

  it("the discovered set is persisted: after a restart on the same data folder the file is still effective", async () => {
    const first = await readInFirstTurn("pkg/src/main.ts");
    requestOf(await first.host.step(first.id));
    await close(first.host);

    const { host } = await open();
    await host.prompt(first.id, "after restart");
    const resumed = requestOf(await host.step(first.id));
    // Still effective: no removal text, and the admitted message stays in projected history.
    expect(transcript(resumed.messages)).to.include(`system-update: ${nestedText}`);
    expect(await systemUpdates(host, first.id)).to.deep.equal([nestedText]);
    // It is a live source, not just history: a change is admitted.
    writeTree(root, { "pkg/AGENTS.md": "pkg rules v2" });
    await host.prompt(first.id, "changed");
    requestOf(await host.step(first.id));
    expect((await systemUpdates(host, first.id)).at(-1)).to.match(/^The instructions from pkg\/AGENTS\.md have changed\./);
  });

  it("after compaction the discovered file is folded into the new Baseline, with no separate update", async () => {
    const { host, id } = await readInFirstTurn("pkg/src/main.ts");
    const admitted = requestOf(await host.step(id));
    expect(baselineOf(admitted)).to.not.contain("pkg rules");

    await host.compact(id);
    await host.prompt(id, "continue");
    const after = requestOf(await host.step(id));
    expect(instructionSections(baselineOf(after))).to.deep.equal(["AGENTS.md: root rules", "pkg/AGENTS.md: pkg rules"]);
    expect(after.messages.map((m) => m.role)).to.deep.equal(["summary", "user"]);
    expect(await systemUpdates(host, id)).to.deep.equal([nestedText]);
  });

  it("a move re-resolves: the new location's epoch starts without the set discovered elsewhere", async () => {
    const location = path.join(root, "pkg");
    writeTree(root, { "pkg/sub/AGENTS.md": "sub rules", "pkg/sub/y.ts": "y" });
    const { host, id } = await readInFirstTurn("sub/y.ts", location);
    requestOf(await host.step(id));
    expect(await systemUpdates(host, id)).to.deep.equal(["Instructions from pkg/sub/AGENTS.md:\n\nsub rules"]);

    const destination = path.join(root, "other");
    await host.move(id, destination);
    await host.prompt(id, "moved");
    const moved = requestOf(await host.step(id));
    expect(instructionSections(baselineOf(moved))).to.deep.equal(["AGENTS.md: root rules", "other/AGENTS.md: other rules"]);
    // A new epoch: no removal message, and the old epoch's update left projected history.
    expect(moved.messages.map((m) => m.role)).to.not.include("system-update");
    expect(await systemUpdates(host, id)).to.have.length(1);

    // The set is kept per location: returning re-resolves the original location with what was discovered there.
    await host.move(id, location);
    await host.prompt(id, "back");
    const back = requestOf(await host.step(id));
    expect(instructionSections(baselineOf(back))).to.deep.equal([
      "AGENTS.md: root rules",
      "pkg/AGENTS.md: pkg rules",
      "pkg/sub/AGENTS.md: sub rules",
    ]);
  });

  it("discovery is stored per session and location, in discovery order", async () => {
    const { host, id } = await readInFirstTurn("pkg/src/main.ts");
    requestOf(await host.step(id));
    const store = new SqliteSessionStore(sessionsFile(data.path));
    try {
      // The root file is ambient already; recording it again is harmless.
      expect(await store.discoveredInstructions(id, root)).to.deep.equal([
        path.join(root, "AGENTS.md"),
        path.join(root, "pkg", "AGENTS.md"),
      ]);
      expect(await store.discoveredInstructions(id, path.join(root, "other"))).to.deep.equal([]);
    } finally {
      await store.close();
    }
  });

  it("with discovery off, the read tool still reads but discovers nothing", async () => {
    const { host, id, toolStep } = await readInFirstTurn("pkg/src/main.ts", root, { instructions: { discovery: false } });
    expect(baselineOf(toolStep)).to.not.contain("Instructions from");
    const next = requestOf(await host.step(id));
    expect(transcript(next.messages).at(-1)).to.equal("tool: export const main = 1;\n");
    expect(await systemUpdates(host, id)).to.deep.equal([]);
  });
});
