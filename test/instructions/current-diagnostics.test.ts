// The current view of instruction problems: a problem holds until the file is read again
// (or is gone), then leaves `currentDiagnostics()` and stays in the history; one that
// comes back holds again, counted in the same record.

import { chmodSync, rmSync } from "node:fs";
import path from "node:path";
import { expect } from "chai";
import type { Diagnostic } from "../../core/base/diagnostics.ts";
import type { Host } from "../../core/index.ts";
import { asUnprivileged, hostsPerTest, markProjectRoot, turn, writeTree } from "./harness.ts";

describe("instruction service: current diagnostics", () => {
  const { tree, startSession } = hostsPerTest("current");
  let root: string;

  beforeEach(() => {
    root = path.join(tree.path, "project");
    markProjectRoot(root);
  });

  const ofInstructions = (diagnostics: readonly Diagnostic[]) =>
    diagnostics.filter((d) => d.origin === "instructions").map((d) => [path.relative(root, d.file), d.message]);
  const current = (host: Host) => ofInstructions(host.currentDiagnostics());
  const history = (host: Host) => ofInstructions(host.diagnostics);

  it("an unreadable AGENTS.md is current until it is readable again, stays in the history, and is current again when it breaks again", async () => {
    writeTree(root, { "AGENTS.md": "root rules" });
    const file = path.join(root, "AGENTS.md");
    chmodSync(file, 0o000);
    const { host, id } = await startSession(root);
    // Root reads any file; as root the boundary runs as `nobody`, so the read really fails with EACCES.
    await asUnprivileged(() => turn(host, id, "one"));
    const [problem, ...more] = current(host);
    expect(more).to.deep.equal([]);
    expect(problem?.[0]).to.equal("AGENTS.md");
    expect(problem?.[1]).to.match(/^cannot be read right now: .*EACCES/);

    chmodSync(file, 0o644);
    await turn(host, id, "two");
    expect(current(host)).to.deep.equal([]);
    expect(history(host)).to.deep.equal([problem]);

    chmodSync(file, 0o000);
    await asUnprivileged(() => turn(host, id, "three"));
    expect(current(host)).to.deep.equal([problem]);
    // The same problem again: the same record, not a new one.
    expect(history(host)).to.deep.equal([problem]);
  });

  it("a refused file's problem is current until the file is fixed; a different problem supersedes it; a recurrence holds again", async () => {
    writeTree(root, { "AGENTS.md": `${"x".repeat(64)}` });
    const file = path.join(root, "AGENTS.md");
    const { host, id } = await startSession(root, [], { instructions: { maxBytes: 32 } });
    await turn(host, id, "one");
    const oversize = ["AGENTS.md", `refused: ${file} is 64 bytes, over the limit of 32`];
    expect(current(host)).to.deep.equal([oversize]);
    // Reported again at the next boundary: still one record.
    await turn(host, id, "two");
    expect(history(host)).to.deep.equal([oversize]);

    writeTree(root, { "AGENTS.md": Buffer.from("r\u0000r") });
    await turn(host, id, "three");
    const binary = ["AGENTS.md", `refused: ${file} is binary (it contains NUL bytes)`];
    expect(current(host)).to.deep.equal([binary]);

    writeTree(root, { "AGENTS.md": "root rules" });
    await turn(host, id, "four");
    expect(current(host)).to.deep.equal([]);
    expect(history(host)).to.deep.equal([oversize, binary]);

    writeTree(root, { "AGENTS.md": `${"x".repeat(64)}` });
    await turn(host, id, "five");
    expect(current(host)).to.deep.equal([oversize]);
    expect(history(host)).to.deep.equal([oversize, binary]);
  });

  it("a refused file that is deleted no longer has a current problem", async () => {
    writeTree(root, { "AGENTS.md": "root rules", "a/AGENTS.md": "y".repeat(64) });
    const { host, id } = await startSession(path.join(root, "a"), [], { instructions: { maxBytes: 32 } });
    await turn(host, id, "one");
    expect(current(host).map(([file]) => file)).to.deep.equal([path.join("a", "AGENTS.md")]);
    rmSync(path.join(root, "a", "AGENTS.md"));
    await turn(host, id, "two");
    expect(current(host)).to.deep.equal([]);
    expect(history(host)).to.have.length(1);
  });
});
