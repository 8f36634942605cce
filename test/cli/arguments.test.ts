// One argument parser for every command (issue 49): a shared option means and checks the same
// in each command that takes it, and a mistake names the argument and the command, followed by
// the command's usage.

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { expect } from "chai";
import { keepText, parseCommandLine, valueOption } from "../../scripts/cli/arguments.ts";
import { parseDevArgs } from "../../scripts/cli/dev/args.ts";
import { parseInspectArgs } from "../../scripts/cli/inspect.ts";
import { main } from "../../scripts/cli/main.ts";
import { parseProxyArgs } from "../../scripts/cli/proxy.ts";
import { commandUsage } from "../../scripts/cli/usage.ts";

/** Runs the command line; a `proxy` that starts is stopped at once. */
async function cli(args: string[], cwd: string) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(args, { cwd, out: (t) => out.push(t), err: (t) => err.push(t), env: {}, stop: Promise.resolve() });
  return { code, stdout: out.join("\n"), stderr: err.join("\n") };
}

const firstLine = (text: string) => text.split("\n")[0];

describe("context-host command line: one argument parser", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "cli-arguments-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const locationCommands = ["render", "check", "proxy"] as const;

  it("--location refuses a folder that does not exist with the same words in render, check and proxy", async () => {
    for (const command of locationCommands) {
      const { code, stderr } = await cli([command, "--location", "nowhere"], dir);
      expect({ command, code }).to.deep.equal({ command, code: 64 });
      expect(firstLine(stderr)).to.equal(
        `context-host ${command}: --location nowhere: no such folder (${path.join(dir, "nowhere")})`,
      );
    }
  });

  it("--location refuses a file with the same words in render, check and proxy", async () => {
    writeFileSync(path.join(dir, "notes.txt"), "not a folder");
    for (const command of locationCommands) {
      const { code, stderr } = await cli([command, "--location", "notes.txt"], dir);
      expect({ command, code }).to.deep.equal({ command, code: 64 });
      expect(firstLine(stderr)).to.equal(
        `context-host ${command}: --location notes.txt: no such folder (${path.join(dir, "notes.txt")})`,
      );
    }
  });

  it("--location followed by another option has no value, in render, check and proxy alike", async () => {
    for (const command of locationCommands) {
      const { code, stderr } = await cli([command, "--location", "--json"], dir);
      expect({ command, code }).to.deep.equal({ command, code: 64 });
      expect(firstLine(stderr)).to.equal(`context-host ${command}: --location needs a folder`);
    }
  });

  it("--location accepts a folder that exists in render and check alike", async () => {
    mkdirSync(path.join(dir, "work"));
    for (const command of ["render", "check"]) {
      const { code, stderr } = await cli([command, "--location", "work"], dir);
      expect({ command, code }, stderr).to.deep.equal({ command, code: 0 });
    }
    expect(parseProxyArgs(["--location", "work"], dir).location).to.equal(path.join(dir, "work"));
  });

  it("an unknown option is refused naming itself and the command, then the command's usage, in every command", async () => {
    for (const command of ["dev", "proxy", "render", "check", "plugins", "inspect"] as const) {
      const { code, stdout, stderr } = await cli([command, "--frobnicate"], dir);
      expect({ command, code, stdout }).to.deep.equal({ command, code: 64, stdout: "" });
      expect(stderr).to.equal(`context-host ${command}: unknown argument "--frobnicate"\n\n${commandUsage[command]}`);
    }
  });

  it("a word a command does not take is refused naming it and the command", async () => {
    const { code, stderr } = await cli(["render", "plugins"], dir);
    expect(code).to.equal(64);
    expect(firstLine(stderr)).to.equal('context-host render: unknown argument "plugins" (render takes only options)');
  });

  it("an option left without its value says what it needs, in every command that takes it", async () => {
    for (const command of ["dev", "proxy", "render", "check", "plugins"]) {
      const { code, stderr } = await cli([command, "--settings"], dir);
      expect({ command, code }).to.deep.equal({ command, code: 64 });
      expect(firstLine(stderr)).to.equal(`context-host ${command}: --settings needs a file`);
    }
  });

  it("an option that takes no value is refused when given one, naming it", async () => {
    for (const command of ["render", "check", "plugins", "inspect"]) {
      const { code, stderr } = await cli([command, "--json=yes"], dir);
      expect({ command, code }).to.deep.equal({ command, code: 64 });
      expect(firstLine(stderr)).to.equal(`context-host ${command}: --json takes no value`);
    }
  });

  it("--data and --data-dir both name the data folder, in dev, inspect and proxy", () => {
    const folder = path.join(dir, "kept");
    for (const spelling of ["--data", "--data-dir"]) {
      expect(parseDevArgs([spelling, "kept"], dir).dataDir, `dev ${spelling}`).to.equal(folder);
      expect(parseInspectArgs(["--list", spelling, "kept"], dir).dataDir, `inspect ${spelling}`).to.equal(folder);
      expect(parseProxyArgs([spelling, "kept"], dir, {}).dataDir, `proxy ${spelling}`).to.equal(folder);
    }
  });

  it("a command cannot declare an option of its own under a shared option's spelling", () => {
    const line = { command: "render", shared: [], own: { config: valueOption("a file", keepText) } } as const;
    expect(() => parseCommandLine([], dir, line)).to.throw("render: --config is a shared option");
  });
});
