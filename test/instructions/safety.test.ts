// Safe file loading on real folder trees: nothing outside the project root is read (a
// symlink out is refused with a diagnostic), oversize and non-UTF-8 files are refused
// whole, and a transient read error is Unavailable Context: the admitted state is kept
// and nothing is emitted. The `read` tool refuses files outside the project root.

import { execFile } from "node:child_process";
import { chmodSync, mkdirSync, readdirSync, symlinkSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { expect } from "chai";
import type { Diagnostic } from "../../core/base/diagnostics.ts";
import type { Host, ScriptedTurn } from "../../core/index.ts";
import { readTextFile } from "../../core/sources/instructions/files.ts";
import { programArgs } from "../support/compiled.ts";
import {
  asUnprivileged,
  baselineOf,
  hostsPerTest,
  instructionSections,
  isRoot,
  markProjectRoot,
  nobody,
  readCall,
  requestOf,
  systemUpdates,
  type TestHostOptions,
  transcript,
  turn,
  writeTree,
} from "./harness.ts";

const run = promisify(execFile);

/**
 * Runs one boundary of a session in a child process as an unprivileged user (`nobody`
 * when this process is root; the current user otherwise), with the data folder opened
 * up to it. Resolves with what the child saw.
 */
async function stepInUnprivilegedProcess(dataDir: string, id: string, globalFile: string, text: string) {
  if (isRoot()) {
    chmodSync(dataDir, 0o777);
    for (const name of readdirSync(dataDir)) chmodSync(path.join(dataDir, name), 0o666);
  }
  const { stdout } = await run(
    process.execPath,
    [...programArgs("test/instructions/fixtures/step-once.ts"), dataDir, id, globalFile, text],
    {
      cwd: fileURLToPath(new URL("../..", import.meta.url)),
      ...(isRoot() ? { uid: nobody, gid: nobody } : {}),
    },
  );
  return JSON.parse(stdout) as { kind: string; systemUpdates: string[]; diagnostics: Diagnostic[] };
}

describe("instruction service: safe file loading", () => {
  const { data, tree, startSession, close } = hostsPerTest("safe");
  let root: string;
  let outside: string;

  beforeEach(() => {
    root = path.join(tree.path, "project");
    outside = path.join(tree.path, "outside");
    markProjectRoot(root);
    writeTree(tree.path, {
      "project/src/main.ts": "export {};\n",
      "outside/secret.md": "SECRET outside the project",
    });
  });

  /** A session in `location` (the project root unless given) whose provider follows `script`. */
  function start(options: Omit<TestHostOptions, "providers"> & { script?: readonly ScriptedTurn[]; location?: string } = {}) {
    const { script = [], location = root, ...rest } = options;
    return startSession(location, script, rest);
  }

  function instructionDiagnostics(host: Host): Diagnostic[] {
    return host.diagnostics.filter((d) => d.origin === "instructions" && d.phase === "instructions");
  }

  it("an AGENTS.md that is a symlink to a file outside the project root is refused with a diagnostic, not loaded", async () => {
    writeTree(root, { "a/AGENTS.md": "a rules" });
    symlinkSync(path.join(outside, "secret.md"), path.join(root, "AGENTS.md"));
    const { host, id } = await start({ location: path.join(root, "a") });
    // The problem reaches the host's one event channel, as a plugin's would.
    const heard: Diagnostic[] = [];
    host.onPluginEvent((event) => {
      if (event.kind === "diagnostic") heard.push(event.diagnostic);
    });
    const request = await turn(host, id, "hello");
    expect(heard.map((d) => [d.origin, d.file])).to.deep.equal([["instructions", path.join(root, "AGENTS.md")]]);
    expect(baselineOf(request)).to.not.contain("SECRET");
    expect(instructionSections(baselineOf(request))).to.deep.equal(["a/AGENTS.md: a rules"]);
    const [diagnostic, ...more] = instructionDiagnostics(host);
    expect(more).to.deep.equal([]);
    expect(diagnostic?.file).to.equal(path.join(root, "AGENTS.md"));
    expect(diagnostic?.message).to.match(/^refused: .*outside the project root/);
    // Reported once, not at every boundary.
    await turn(host, id, "again");
    expect(instructionDiagnostics(host)).to.have.length(1);
  });

  it("a symlink to a file inside the project root is followed", async () => {
    writeTree(root, { "docs/agents.md": "shared rules" });
    symlinkSync(path.join(root, "docs", "agents.md"), path.join(root, "AGENTS.md"));
    const { host, id } = await start();
    expect(instructionSections(baselineOf(await turn(host, id, "hello")))).to.deep.equal(["AGENTS.md: shared rules"]);
    expect(instructionDiagnostics(host)).to.deep.equal([]);
  });

  it("a file over the size limit is refused whole with a diagnostic", async () => {
    writeTree(root, { "AGENTS.md": "small", "a/AGENTS.md": `${"x".repeat(64)} TAIL` });
    const { host, id } = await start({ location: path.join(root, "a"), instructions: { maxBytes: 32 } });
    const baseline = baselineOf(await turn(host, id, "hello"));
    expect(instructionSections(baseline)).to.deep.equal(["AGENTS.md: small"]);
    expect(baseline).to.not.contain("xxxx");
    const diagnostics = instructionDiagnostics(host);
    expect(diagnostics.map((d) => d.file)).to.deep.equal([path.join(root, "a", "AGENTS.md")]);
    expect(diagnostics[0]?.message).to.contain("69 bytes, over the limit of 32");
  });

  it("the default size limit is 256 KiB", async () => {
    writeTree(root, { "AGENTS.md": "y".repeat(256 * 1024 + 1) });
    const { host, id } = await start();
    expect(instructionSections(baselineOf(await turn(host, id, "hello")))).to.deep.equal([]);
    expect(instructionDiagnostics(host)[0]?.message).to.contain("over the limit of 262144");
  });

  it("a file with NUL bytes or invalid UTF-8 is refused whole with a diagnostic", async () => {
    writeTree(root, {
      "AGENTS.md": Buffer.from("binary start\u0000 and more text"),
      "a/AGENTS.md": Buffer.concat([Buffer.from("valid start "), Buffer.from([0xc3, 0x28, 0xff]), Buffer.from(" end")]),
      "a/b/AGENTS.md": "fine ünïcödé",
    });
    const { host, id } = await start({ location: path.join(root, "a", "b") });
    const baseline = baselineOf(await turn(host, id, "hello"));
    expect(instructionSections(baseline)).to.deep.equal(["a/b/AGENTS.md: fine ünïcödé"]);
    expect(baseline).to.not.contain("binary start").and.to.not.contain("valid start");
    // Files are read concurrently: which diagnostic comes first is not part of the contract.
    expect(
      instructionDiagnostics(host)
        .map((d) => [path.relative(root, d.file), d.message.replace(/^refused: \S+ /, "")])
        .sort(([a], [b]) => (String(a) < String(b) ? -1 : 1)),
    ).to.deep.equal([
      ["AGENTS.md", "is binary (it contains NUL bytes)"],
      ["a/AGENTS.md", "is not UTF-8 text"],
    ]);
  });

  it("an admitted file that becomes unacceptable is refused: it no longer applies, with a diagnostic", async () => {
    writeTree(root, { "AGENTS.md": "root rules" });
    const { host, id } = await start();
    await turn(host, id, "one");
    writeTree(root, { "AGENTS.md": Buffer.from([0x72, 0x00, 0x72]) });
    await turn(host, id, "two");
    expect(await systemUpdates(host, id)).to.deep.equal(["The instructions from AGENTS.md no longer apply."]);
    expect(instructionDiagnostics(host)).to.have.length(1);
  });

  it("an AGENTS.md that is a folder is refused as not a regular file", async () => {
    mkdirSync(path.join(root, "AGENTS.md"));
    const { host, id } = await start();
    expect(instructionSections(baselineOf(await turn(host, id, "hello")))).to.deep.equal([]);
    expect(instructionDiagnostics(host)[0]?.message).to.match(/is not a regular file$/);
  });

  it("a transient read error (EACCES) is Unavailable Context: the admitted state is kept, nothing is emitted, and the change arrives once readable", async () => {
    writeTree(root, { "AGENTS.md": "root rules", "a/AGENTS.md": "a rules" });
    const file = path.join(root, "a", "AGENTS.md");
    const { host, id } = await start({ location: path.join(root, "a") });
    const first = await turn(host, id, "one");

    writeTree(root, { "a/AGENTS.md": "a rules v2" });
    chmodSync(file, 0o000);
    // Root reads any file; as root the boundary runs as `nobody`, so the read really fails with EACCES.
    const unreadable = await asUnprivileged(async () => {
      expect(await readTextFile(file, { root, maxBytes: 1024 })).to.include({ kind: "transient" });
      return turn(host, id, "two");
    });
    expect(unreadable.messages.map((m) => m.role)).to.deep.equal(["user", "assistant", "user"]);
    expect(baselineOf(unreadable)).to.equal(baselineOf(first));
    expect(await systemUpdates(host, id)).to.deep.equal([]);
    const diagnostics = instructionDiagnostics(host);
    expect(diagnostics).to.have.length(1);
    expect(diagnostics[0]?.file).to.equal(file);
    expect(diagnostics[0]?.message).to.match(/^cannot be read right now: .*EACCES/);

    chmodSync(file, 0o644);
    await turn(host, id, "three");
    expect(await systemUpdates(host, id)).to.deep.equal([
      "The instructions from a/AGENTS.md have changed. This complete current version supersedes the earlier one:\n\na rules v2",
    ]);
  });

  it("a folder on the way that cannot be searched (EACCES) is Unavailable Context too, not a removal", async function () {
    this.timeout(10_000); // a child process compiles the host with tsx
    const config = path.join(tree.path, "config");
    writeTree(config, { "AGENTS.md": "global rules" });
    writeTree(root, { "AGENTS.md": "root rules" });
    const globalFile = path.join(config, "AGENTS.md");
    const { host, id } = await start({ location: root, instructions: { globalFile } });
    await turn(host, id, "one");
    await close(host);

    chmodSync(config, 0o000);
    let seen: { kind: string; systemUpdates: string[]; diagnostics: Diagnostic[] };
    try {
      // A real unprivileged process: `existsSync` uses access(2), which checks the real user id.
      seen = await stepInUnprivilegedProcess(data.path, id, globalFile, "two");
    } finally {
      chmodSync(config, 0o755);
    }
    expect(seen.kind).to.equal("replied");
    expect(seen.systemUpdates).to.deep.equal([]);
    expect(seen.diagnostics.map((d) => [d.file, d.phase])).to.deep.equal([[globalFile, "instructions"]]);
    expect(seen.diagnostics[0]?.message).to.match(/^cannot be read right now: .*EACCES/);

    const again = await start({ location: root, instructions: { globalFile } });
    await turn(again.host, id, "three");
    expect(await systemUpdates(again.host, id)).to.deep.equal([]);
  });

  it("an instruction file unreadable before it was ever admitted is left out of the first Baseline, then admitted once readable", async () => {
    writeTree(root, { "AGENTS.md": "root rules" });
    chmodSync(path.join(root, "AGENTS.md"), 0o000);
    const { host, id } = await start();
    await host.prompt(id, "hello");
    const first = requestOf(await asUnprivileged(() => host.step(id)));
    expect(instructionSections(baselineOf(first))).to.deep.equal([]);
    chmodSync(path.join(root, "AGENTS.md"), 0o644);
    await host.prompt(id, "again");
    await host.step(id);
    expect(await systemUpdates(host, id)).to.deep.equal(["Instructions from AGENTS.md:\n\nroot rules"]);
  });

  it("the read tool refuses a ../ path and a symlink out of the project root with an error result", async () => {
    symlinkSync(path.join(outside, "secret.md"), path.join(root, "src", "link.md"));
    const script: ScriptedTurn[] = [
      { text: "", toolCalls: [{ id: "c1", name: "read", input: { path: "../../outside/secret.md" } }] },
      { text: "", toolCalls: [{ id: "c2", name: "read", input: { path: "link.md" } }] },
      { text: "", toolCalls: [{ id: "c3", name: "read", input: { path: path.join(outside, "secret.md") } }] },
      // A path outside the project is refused whether or not it exists: no probing outside.
      { text: "", toolCalls: [{ id: "c4", name: "read", input: { path: "../../outside/missing.md" } }] },
      { text: "", toolCalls: [{ id: "c5", name: "read", input: { file: "main.ts" } }] },
      { text: "", toolCalls: [{ id: "c6", name: "read", input: { path: "main.ts" } }] },
    ];
    const { host, id } = await start({ script, location: path.join(root, "src") });
    await host.prompt(id, "go");
    for (let i = 0; i < script.length; i++) requestOf(await host.step(id));
    const results = (await host.messages(id)).filter((m) => m.role === "tool").map((m) => m.text);
    expect(results).to.have.length(6);
    for (const result of results.slice(0, 4)) {
      expect(result).to.match(/^Error: .*outside the project root/);
      expect(result).to.not.contain("SECRET");
    }
    expect(results[4]).to.match(/^Error: read: invalid input/);
    expect(results[5]).to.equal("export {};\n");
  });

  it("the read tool refuses binary and oversize files whole", async () => {
    writeTree(root, { "bin.dat": Buffer.from([1, 0, 2]), "big.txt": "z".repeat(100) });
    const { host, id } = await start({
      script: [readCall("bin.dat"), readCall("big.txt")],
      instructions: { maxReadBytes: 50 },
    });
    await host.prompt(id, "go");
    requestOf(await host.step(id));
    requestOf(await host.step(id));
    const final = requestOf(await host.step(id));
    expect(transcript(final.messages).filter((line) => line.startsWith("tool: "))).to.deep.equal([
      `tool: Error: cannot read bin.dat: ${path.join(root, "bin.dat")} is binary (it contains NUL bytes)`,
      `tool: Error: cannot read big.txt: ${path.join(root, "big.txt")} is 100 bytes, over the limit of 50`,
    ]);
  });

  it("reading through a symlinked folder that leaves the project discovers nothing outside it", async () => {
    writeTree(outside, { "pkg/AGENTS.md": "outside rules", "pkg/x.ts": "x" });
    symlinkSync(path.join(outside, "pkg"), path.join(root, "pkg"));
    const { host, id } = await start({ script: [readCall("pkg/x.ts")] });
    await host.prompt(id, "go");
    requestOf(await host.step(id));
    const next = requestOf(await host.step(id));
    expect(transcript(next.messages).at(-1)).to.match(/^tool: Error: .*outside the project root/);
    expect(await systemUpdates(host, id)).to.deep.equal([]);
  });
});
