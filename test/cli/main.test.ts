// The command line as a whole: help and version anywhere, `help COMMAND`, usage errors
// on stderr with exit 64 naming what was wrong, and no stack trace for a user's mistake.

import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { PassThrough } from "node:stream";
import { expect } from "chai";
import { main, packageVersion } from "../../scripts/cli/main.ts";
import { commandUsage, overview } from "../../scripts/cli/usage.ts";

async function cli(args: string[], cwd: string) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(args, { cwd, out: (t) => out.push(t), err: (t) => err.push(t) });
  return { code, stdout: out.join("\n"), stderr: err.join("\n") };
}

/** `dev` with no input: it starts, prints its banner and ends (exit 0). */
async function devBanner(args: string[], cwd: string) {
  const input = new PassThrough();
  const output = new PassThrough();
  let text = "";
  output.on("data", (chunk: Buffer) => {
    text += chunk.toString("utf8");
  });
  input.end();
  const err: string[] = [];
  const code = await main(["dev", ...args], { cwd, out: () => {}, err: (t) => err.push(t), input, output, env: {} });
  return { code, stdout: text, stderr: err.join("\n") };
}

const count = (text: string, needle: string) => text.split(needle).length - 1;

describe("context-host command line", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "cli-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("--help and -h print the overview, or the command's usage, wherever they stand", async () => {
    for (const args of [["--help"], ["-h"]]) {
      const { code, stdout, stderr } = await cli(args, dir);
      expect([code, stdout, stderr]).to.deep.equal([0, overview, ""]);
    }
    for (const args of [
      ["render", "--help"],
      ["render", "--plugins", "x", "-h"],
      ["dev", "--provider", "-h"],
    ]) {
      const command = args[0] as "render" | "dev";
      const { code, stdout } = await cli(args, dir);
      expect(code).to.equal(0);
      expect(stdout).to.equal(commandUsage[command]);
    }
  });

  it("help COMMAND prints that command's usage; help of an unknown command is bad usage", async () => {
    for (const command of ["dev", "render", "check", "inspect"] as const) {
      const { code, stdout } = await cli(["help", command], dir);
      expect(code).to.equal(0);
      expect(stdout).to.equal(commandUsage[command]);
    }
    const unknown = await cli(["help", "frobnicate"], dir);
    expect(unknown.code).to.equal(64);
    expect(unknown.stderr).to.contain('no command "frobnicate"');
  });

  it("--version and -v print the package version", async () => {
    for (const args of [["--version"], ["-v"], ["render", "-v"]]) {
      const { code, stdout } = await cli(args, dir);
      expect([code, stdout]).to.deep.equal([0, packageVersion()]);
    }
    expect(packageVersion()).to.match(/^\d+\.\d+\.\d+/);
  });

  it("no command, or an unknown one, is bad usage on stderr with exit 64", async () => {
    const none = await cli([], dir);
    expect([none.code, none.stdout]).to.deep.equal([64, ""]);
    expect(none.stderr).to.equal(overview);
    const unknown = await cli(["frobnicate"], dir);
    expect([unknown.code, unknown.stdout]).to.deep.equal([64, ""]);
    expect(unknown.stderr).to.match(/^context-host: unknown command "frobnicate"\n/);
  });

  for (const command of ["render", "dev"]) {
    it(`${command}: a plugin folder that does not exist, or is a file, is bad usage naming it`, async () => {
      const missing = await cli([command, "--plugins", "./does-not-exist"], dir);
      expect(missing.code).to.equal(64);
      expect(missing.stderr).to.contain("--plugins ./does-not-exist: no such folder");
      expect(missing.stderr).to.contain(path.join(dir, "does-not-exist"));
      expect(missing.stderr).not.to.match(/\n\s+at /); // no stack trace
      writeFileSync(path.join(dir, "package.json"), "{}");
      const file = await cli([command, "--plugins", "./package.json"], dir);
      expect(file.code).to.equal(64);
      expect(file.stderr).to.contain("--plugins ./package.json: not a folder");
      expect(file.stderr).not.to.match(/\n\s+at /);
    });
  }

  describe("which plugins: one rule in every command", function () {
    this.timeout(20_000);

    it("no ./plugins and none named means no plugins, said once in one line; every command goes on", async () => {
      const why = `there is no plugins folder here (${path.join(dir, "plugins")})`;
      const hint = "name plugins with --plugins DIR, or in context-host.json's plugins";
      for (const command of ["render", "plugins", "check"]) {
        const { code, stderr } = await cli([command], dir);
        expect({ command, code }, stderr).to.deep.equal({ command, code: 0 });
        expect(count(stderr, why), stderr).to.equal(1);
        const named = command === "check" ? "name plugins as context-host check PLUGIN, or in context-host.json's plugins" : hint;
        expect(stderr.split("\n")).to.include(`context-host: no plugins: ${why}; ${named}`);
      }
      const dev = await devBanner([], dir);
      expect(dev.code, dev.stderr).to.equal(0);
      expect(dev.stdout.split("\n")).to.include(`plugins: none — ${why}; ${hint}`);
      expect(count(dev.stdout + dev.stderr, why)).to.equal(1);
    });

    it('the settings file\'s "plugins": [] means no plugins, with nothing more to say', async () => {
      writeFileSync(path.join(dir, "context-host.json"), JSON.stringify({ plugins: [] }));
      for (const command of ["render", "plugins", "check"]) {
        const { code, stderr } = await cli([command], dir);
        expect({ command, code }, stderr).to.deep.equal({ command, code: 0 });
        expect(stderr, command).not.to.contain("no plugins");
      }
      const dev = await devBanner([], dir);
      expect(dev.code, dev.stderr).to.equal(0);
      expect(dev.stdout.split("\n")).to.include("plugins: none");
      expect(dev.stdout).not.to.contain("— from");
    });

    it("a folder the user named that does not exist is an error naming it, in every command", async () => {
      const missing = path.join(dir, "nowhere");
      for (const args of [
        ["render", "--plugins", "nowhere"],
        ["plugins", "--plugins", "nowhere"],
        ["check", "nowhere"],
      ]) {
        const { code, stderr } = await cli(args, dir);
        expect({ args, code }).to.deep.equal({ args, code: 64 });
        expect(stderr, args.join(" ")).to.contain(missing);
      }
      expect((await devBanner(["--plugins", "nowhere"], dir)).code).to.equal(64);
      writeFileSync(path.join(dir, "context-host.json"), JSON.stringify({ plugins: ["./nowhere"] }));
      for (const command of ["render", "plugins", "check"]) {
        const { code, stderr } = await cli([command], dir);
        expect({ command, code }).to.deep.equal({ command, code: 64 });
        expect(stderr, command).to.contain(missing);
      }
      const dev = await devBanner([], dir);
      expect(dev.code).to.equal(64);
      expect(dev.stderr).to.contain(missing);
    });
  });

  it("dev --data naming a file: the error says the data folder is a file, in the user's terms", async () => {
    writeFileSync(path.join(dir, "data"), "a file");
    const { code, stderr } = await devBanner(["--data", "data", "--plugins", dir], dir);
    expect(code).to.equal(1);
    expect(stderr).to.equal(
      `context-host: StorePathUnusable: data folder ${path.join(dir, "data")}: ${path.join(dir, "data")} is a file, not a folder — move it away, or choose another data folder`,
    );
  });

  it("dev: bad options are usage errors naming the option", async () => {
    const cases: Array<[string[], string]> = [
      [["dev", "--provider", "gpt"], "--provider gpt: not a provider"],
      [["dev", "--provider", "anthropic"], "--provider anthropic needs --model M"],
      [["dev", "--base-url", "http://localhost:1"], "--base-url needs --provider anthropic or openai"],
      [["dev", "--provider", "openai", "--model", "m", "--base-url", "nope"], "--base-url nope: not a URL"],
      [["dev", "--inspect=http"], "--inspect=http: a port is a number"],
      [["dev", "--model"], "--model needs a model name"],
      [["dev", "--frobnicate"], 'unknown argument "--frobnicate"'],
      [["dev", "--settings", "nope.json"], "no such file"],
    ];
    for (const [args, message] of cases) {
      const { code, stderr } = await cli(args, dir);
      expect(code, args.join(" ")).to.equal(64);
      expect(stderr, args.join(" ")).to.contain(message);
      // A settings file's error is followed by a hint to the usage, an argument's by the usage.
      if (args.includes("--settings")) expect(stderr).to.contain("(context-host dev --help prints the usage)");
      else expect(stderr).to.contain(commandUsage.dev);
    }
  });

  it("the settings file: unknown settings and bad values are usage errors naming the file and the setting", async () => {
    const file = path.join(dir, "context-host.json");
    const cases: Array<[string, string]> = [
      ['{"plugin": []}', "setting plugin: unknown setting"],
      ['{"plugins": {}}', "setting plugins: must be array"],
      ['{"plugins": ["./nowhere"]}', `setting plugins[0] "./nowhere": no such folder or file (${path.join(dir, "nowhere")})`],
      ['{"plugins": ["context-host-plugin-none"]}', "no installed package context-host-plugin-none"],
      ['{"pluginSettings": 3}', "setting pluginSettings: must be an object"],
      ['{"timeZone": "Mars/Olympus"}', "timeZone"],
      ['{"instructions": {"discovery": "yes"}}', "setting instructions.discovery"],
      ["[1]", "expected a JSON object"],
      ["{", "not JSON"],
    ];
    for (const [text, message] of cases) {
      writeFileSync(file, text);
      // The default file of the working folder is read without being named.
      for (const command of ["render", "dev"]) {
        const { code, stderr } = await cli([command, "--plugins", dir], dir);
        expect(code, `${command} ${text}`).to.equal(64);
        expect(stderr, text).to.contain(`settings file ${file}: `);
        expect(stderr, text).to.contain(message);
        // The error and where the usage is, not the usage: it does not explain a settings file.
        expect(stderr.split("\n").at(-1), text).to.equal(`(context-host ${command} --help prints the usage)`);
        expect(stderr, text).not.to.contain("usage:");
      }
    }
  });
});
