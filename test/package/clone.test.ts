// A fresh clone of the repository after `npm install` alone, no build: the `context-host`
// program runs (bin/context-host.mjs runs the TypeScript sources through tsx while dist/
// is not built), examples/third-party-plugin installs context-host from the repository
// (`file:../..`) and its author's first command, `context-host check`, passes, and
// examples/ai-sdk-agent's `npm start` runs against the sources.
//
// The clone is the files git tracks (and new ones it does not ignore) copied to a temp
// folder; its node_modules links each of this project's installed packages, as
// `npm install` would lay them out (the package has no install-time script that builds).
// The examples' installs run offline: packages that come from the registry are this
// project's, and only what the repository itself provides is installed by npm.

import { execFile } from "node:child_process";
import {
  cpSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { expect } from "chai";

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, "../..");

/** Runs a command; resolves with its exit code and output, never rejects on a non-zero exit. */
async function inFolder(folder: string, command: string, args: readonly string[], env: NodeJS.ProcessEnv = {}) {
  try {
    const { stdout, stderr } = await run(command, args, {
      cwd: folder,
      env: { ...process.env, npm_config_offline: "true", NODE_OPTIONS: "", ...env },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

describe("package: a fresh clone after npm install, nothing built", function () {
  this.timeout(60_000);
  let clone: string;

  before(async () => {
    clone = realpathSync(mkdtempSync(path.join(os.tmpdir(), "context-host-clone-")));
    const { stdout } = await run("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], {
      cwd: root,
      maxBuffer: 16 << 20,
    });
    for (const file of stdout.split("\0").filter(Boolean)) {
      const from = path.join(root, file);
      try {
        cpSync(from, path.join(clone, file));
      } catch {
        // deleted in the work tree, not yet in the index
      }
    }
    const modules = path.join(clone, "node_modules");
    mkdirSync(modules);
    for (const entry of readdirSync(path.join(root, "node_modules"))) {
      if (entry !== ".cache") symlinkSync(path.join(root, "node_modules", entry), path.join(modules, entry));
    }
  });
  after(() => rmSync(clone, { recursive: true, force: true }));

  it("npx context-host --help prints the usage, dist/ not built", async () => {
    const { code, stdout, stderr } = await inFolder(clone, "npx", ["--no-install", "context-host", "--help"]);
    expect(code, stderr).to.equal(0);
    expect(stdout).to.match(/^usage: context-host <command>/);
  });

  it("examples/third-party-plugin installs context-host from the repository, and context-host check passes its plugin", async () => {
    const example = path.join(clone, "examples", "third-party-plugin");
    const manifestFile = path.join(example, "package.json");
    const manifest = JSON.parse(readFileSync(manifestFile, "utf8")) as { devDependencies: Record<string, string> };
    expect(manifest.devDependencies["context-host"]).to.equal("file:../..");
    // Offline: the test tools come from the registry; the repository provides context-host.
    manifest.devDependencies = { "context-host": "file:../.." };
    writeFileSync(manifestFile, JSON.stringify(manifest, null, 2));
    const install = await inFolder(example, "npm", ["install", "--ignore-scripts", "--no-audit", "--no-fund"]);
    expect(install.code, install.stdout + install.stderr).to.equal(0);
    expect(realpathSync(path.join(example, "node_modules", "context-host"))).to.equal(clone);
    // The settings its own test passes to describePluginConformance.
    writeFileSync(path.join(example, "check.json"), JSON.stringify({ pluginSettings: { tides: { harbor: "Brest" } } }));
    const check = await inFolder(example, path.join(example, "node_modules", ".bin", "context-host"), [
      "check",
      "plugins",
      "--settings",
      "check.json",
      "--location",
      "test/project",
    ]);
    expect(check.code, check.stdout + check.stderr).to.equal(0);
    expect(check.stderr).to.contain("1 plugin(s) checked: 0 error(s)");
  });

  it("examples/ai-sdk-agent: npm start without a key runs the agent against the sources", async () => {
    const example = path.join(clone, "examples", "ai-sdk-agent");
    // What `npm install` there lays out: context-host linked from the repository (`file:../..`);
    // its other packages resolve from the clone's node_modules here.
    mkdirSync(path.join(example, "node_modules"));
    symlinkSync(clone, path.join(example, "node_modules", "context-host"));
    const env = { ...process.env };
    delete env.ANTHROPIC_API_KEY;
    const { code, stdout, stderr } = await inFolder(example, "npm", ["start", "--silent"], env);
    expect(code, stderr).to.equal(0);
    expect(stdout).to.match(/^\(scripted\) I was told: You are a coding agent\. Be brief\. \| /);
  });
});
