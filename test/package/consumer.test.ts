// The package as a user gets it: `npm pack` (which builds dist/ through `prepare`), the
// tarball installed into a temp project that has no dev tools, then plain `node` runs a
// host with a plugin of the consumer's own, `tsc` type-checks a consumer of every entry
// point, and the `context-host` program runs: through `npx` once, then through the link
// in node_modules/.bin that npx finds (as a package.json script runs it; npx itself costs
// ~0.7 s of CPU a run). A second project, a copy of
// examples/third-party-plugin, gets the same tarball and runs its author's own test
// (`describePluginConformance` under mocha) and `tsc`.
//
// Installing is done the way npm lays a tarball out, without the network and without
// rebuilding better-sqlite3 (50 s): the tarball is unpacked into node_modules/context-host,
// each of its `dependencies` is linked from this project's node_modules, and its `bin`
// is linked into node_modules/.bin. Only what the tarball's package.json declares is
// there, so a missing dependency fails here as it would for a user.

import { execFile } from "node:child_process";
import {
  chmodSync,
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { expect } from "chai";

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, "../..");
const fixture = path.join(import.meta.dirname, "consumer");
const thirdParty = path.join(root, "examples", "third-party-plugin");
const manifest = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")) as { name: string; version: string };

interface PackedFile {
  readonly path: string;
  readonly size: number;
}

interface Installed {
  readonly folder: string;
  readonly project: string;
  readonly files: readonly PackedFile[];
  readonly unpackedSize: number;
}

/** Packs the package (building it) into `folder` and returns the tarball and what it lists. */
async function pack(folder: string): Promise<{ tarball: string; files: PackedFile[]; unpackedSize: number }> {
  const { stdout } = await run("npm", ["pack", "--json", "--pack-destination", folder], { cwd: root, maxBuffer: 16 << 20 });
  // `prepare` prints the build's output before npm's JSON.
  const [report] = JSON.parse(stdout.slice(stdout.indexOf("[\n"))) as {
    filename: string;
    files: PackedFile[];
    unpackedSize: number;
  }[];
  if (report === undefined) throw new Error(`npm pack printed no report: ${stdout}`);
  return { tarball: path.join(folder, report.filename), files: report.files, unpackedSize: report.unpackedSize };
}

/** Installs `tarball` into `project` as npm would lay it out (see the file comment). */
async function install(tarball: string, project: string): Promise<void> {
  const modules = path.join(project, "node_modules");
  const target = path.join(modules, manifest.name);
  mkdirSync(target, { recursive: true });
  await run("tar", ["-xzf", tarball, "-C", target, "--strip-components=1"]);
  const installed = JSON.parse(readFileSync(path.join(target, "package.json"), "utf8")) as {
    dependencies?: Record<string, string>;
    bin?: Record<string, string>;
  };
  for (const dependency of Object.keys(installed.dependencies ?? {})) {
    const link = path.join(modules, dependency);
    mkdirSync(path.dirname(link), { recursive: true });
    symlinkSync(realpathSync(path.join(root, "node_modules", dependency)), link, "dir");
  }
  mkdirSync(path.join(modules, ".bin"), { recursive: true });
  for (const [name, file] of Object.entries(installed.bin ?? {})) {
    chmodSync(path.join(target, file), 0o755);
    symlinkSync(path.join("..", manifest.name, file), path.join(modules, ".bin", name));
  }
}

/** Links a development tool the way `npm install` of the project's devDependencies would, from this project's node_modules. */
function linkDevDependency(project: string, name: string): void {
  const link = path.join(project, "node_modules", name);
  mkdirSync(path.dirname(link), { recursive: true });
  symlinkSync(realpathSync(path.join(root, "node_modules", name)), link, "dir");
}

/**
 * `tsc --noEmit` in `project`, incremental: the state of the last run's check of the same
 * project (`name`) is kept in node_modules/.cache and copied in first. Its paths are
 * relative to the project, so a fresh temp project reuses it; tsc still reads every file
 * and checks again whatever changed (the package's declarations, the consumer's code).
 */
async function typecheck(project: string, name: string) {
  const tsc = path.join(root, "node_modules", "typescript", "bin", "tsc");
  const state = path.join(project, "tsconfig.tsbuildinfo");
  const kept = path.join(root, "node_modules", ".cache", "context-host", `consumer-${name}.tsbuildinfo`);
  if (existsSync(kept)) copyFileSync(kept, state);
  const result = await inProject(project, process.execPath, [
    tsc,
    ...["--noEmit", "-p", ".", "--singleThreaded", "--incremental", "--tsBuildInfoFile", state],
  ]);
  if (result.code === 0 && existsSync(state)) {
    mkdirSync(path.dirname(kept), { recursive: true });
    copyFileSync(state, kept);
  }
  return result;
}

/** Runs a command in the consumer project; resolves with its exit code and output, never rejects on a non-zero exit. */
async function inProject(project: string, command: string, args: readonly string[]) {
  try {
    const { stdout, stderr } = await run(command, args, {
      cwd: project,
      // No network: npx must find the program in the project, never download one.
      env: { ...process.env, npm_config_offline: "true", NODE_OPTIONS: "" },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

describe("package: a consumer project using the packed tarball", function () {
  this.timeout(60_000);
  let installed: Installed;
  /** The consumer's commands, started together once installed (each never rejects); the tests check their results. */
  let runs: Record<
    "host" | "internal" | "tsc" | "version" | "render" | "check" | "pluginTest" | "pluginTsc" | "mcpMissing",
    ReturnType<typeof inProject>
  >;

  before(async () => {
    const folder = realpathSync(mkdtempSync(path.join(os.tmpdir(), "context-host-consumer-")));
    const project = path.join(folder, "project");
    cpSync(fixture, project, { recursive: true });
    const packed = await pack(folder);
    await install(packed.tarball, project);
    const plugin = path.join(folder, "third-party-plugin");
    cpSync(thirdParty, plugin, { recursive: true });
    await install(packed.tarball, plugin);
    for (const tool of ["mocha", "tsx", "@types/node"]) linkDevDependency(plugin, tool);
    installed = { folder, project, files: packed.files, unpackedSize: packed.unpackedSize };
    const bin = path.join(project, "node_modules", ".bin", "context-host");
    runs = {
      host: inProject(project, process.execPath, ["host.mjs", path.join(folder, "data")]),
      internal: inProject(project, process.execPath, [
        "--input-type=module",
        "--eval",
        'await import("context-host/dist/core/host/host.js");',
      ]),
      tsc: typecheck(project, "project"),
      version: inProject(project, "npx", ["--no-install", "context-host", "--version"]),
      render: inProject(project, bin, ["render", "--plugins", "plugins"]),
      check: inProject(project, bin, ["check", "plugins"]),
      pluginTest: inProject(plugin, process.execPath, [
        path.join("node_modules", "mocha", "bin", "mocha.js"),
        "--reporter",
        "dot",
      ]),
      pluginTsc: typecheck(plugin, "third-party-plugin"),
      // The MCP client is an optional peer the consumer did not install (decision 141).
      mcpMissing: inProject(project, process.execPath, [
        "--input-type=module",
        "--eval",
        `import { createHost, McpClientMissing } from "context-host";
const options = { dataDir: ${JSON.stringify(path.join(folder, "mcp-data"))}, providers: {}, plugins: [], watch: false };
await createHost({ ...options, mcpServers: { x: { command: "none" } } }).then(
  () => console.log("created"),
  (error) => console.log(error instanceof McpClientMissing, error.message),
);
const host = await createHost(options); // without mcpServers nothing of MCP is loaded
await host.close();`,
      ]),
    };
    await Promise.all(Object.values(runs));
  });
  after(() => {
    if (installed !== undefined) rmSync(installed.folder, { recursive: true, force: true });
  });

  it("the tarball holds only dist/ (JavaScript and declarations), README.md, LICENSE and package.json, within the 450 KiB goal unpacked", () => {
    const outside = installed.files.map((file) => file.path).filter((file) => !file.startsWith("dist/"));
    expect(outside.sort()).to.deep.equal(["LICENSE", "README.md", "package.json"]);
    const kinds = new Set(
      installed.files.filter((f) => f.path.startsWith("dist/")).map((f) => f.path.replace(/^.*?(\.d\.ts|\.js\.map|\.js)$/, "$1")),
    );
    // No source maps: they doubled the JavaScript's size (decision 050).
    expect([...kinds].sort()).to.deep.equal([".d.ts", ".js"]);
    // 400 KiB until the cache model shipped (decision 101).
    expect(installed.unpackedSize).to.be.below(450 * 1024);
  });

  it("the declarations import only declarations that ship, declared dependencies and node built-ins", () => {
    const target = path.join(installed.project, "node_modules", manifest.name);
    const shipped = new Set(installed.files.map((file) => file.path));
    const installedManifest = JSON.parse(readFileSync(path.join(target, "package.json"), "utf8")) as {
      dependencies?: Record<string, string>;
    };
    const dependencies = Object.keys(installedManifest.dependencies ?? {});
    const problems: string[] = [];
    for (const file of [...shipped].filter((f) => f.endsWith(".d.ts"))) {
      // TSDoc examples mention imports too; only the code counts.
      const code = readFileSync(path.join(target, file), "utf8").replace(/\/\*[\s\S]*?\*\//g, "");
      for (const [, specifier] of code.matchAll(/(?:from|import)\s*\(?\s*"([^"]+)"/g)) {
        if (specifier === undefined) continue;
        if (specifier.startsWith(".")) {
          const imported = path.posix.join(path.posix.dirname(file), specifier).replace(/\.(ts|js)$/, ".d.ts");
          if (!shipped.has(imported)) problems.push(`${file} imports ${specifier}, which does not ship`);
        } else if (!specifier.startsWith("node:")) {
          const name = specifier.startsWith("@")
            ? specifier.split("/").slice(0, 2).join("/")
            : (specifier.split("/")[0] as string);
          if (!dependencies.includes(name)) problems.push(`${file} imports ${specifier}, not a dependency`);
        }
      }
    }
    expect(problems).to.deep.equal([]);
  });

  it("plain node runs a host end to end: the consumer's plugin, imported through context-host/plugin, reaches the Baseline", async () => {
    const { code, stdout, stderr } = await runs.host;
    expect(stderr).to.equal("");
    expect(code).to.equal(0);
    const output = JSON.parse(stdout) as {
      system: string[];
      reply: string;
      roles: string[];
      plugins: string[];
      diagnostics: string[];
    };
    expect(output.system[0]).to.equal("You are a weather agent.");
    expect(output.system[1]).to.contain("Today's date is").and.contain("The sky over weather is clear.");
    // `SystemContext.absent` from the plugin's own import is the host's value: the source is left out.
    expect(output.system[1]).not.to.contain("Weather alert");
    expect(output.reply).to.equal("It is clear today.");
    expect(output.roles).to.deep.equal(["user", "assistant"]);
    expect(output.plugins).to.deep.equal(["weather"]);
    expect(output.diagnostics).to.deep.equal([]);
  });

  it("mcpServers without the optional MCP client fails createHost with McpClientMissing, saying what to install", async () => {
    const { code, stdout, stderr } = await runs.mcpMissing;
    expect([code, stderr]).to.deep.equal([0, ""]);
    expect(stdout).to.equal(
      "true mcpServers needs the MCP client: install it with `npm install @modelcontextprotocol/client@^2.4.0`\n",
    );
  });

  it("nothing internal is reachable: a module inside dist/ is not exported", async () => {
    const { code, stderr } = await runs.internal;
    expect(code).to.equal(1);
    expect(stderr).to.contain("ERR_PACKAGE_PATH_NOT_EXPORTED");
  });

  it("tsc (module NodeNext, strict) type-checks a consumer of every entry point and its plugin", async () => {
    const { code, stdout, stderr } = await runs.tsc;
    expect(stdout + stderr).to.equal("");
    expect(code).to.equal(0);
  });

  it("npx context-host --version prints the package's version", async () => {
    const { code, stdout } = await runs.version;
    expect(code).to.equal(0);
    expect(stdout.trim()).to.equal(manifest.version);
  });

  it("context-host render (node_modules/.bin) prints the Baseline with the consumer's plugin and exits 0", async () => {
    const { code, stdout, stderr } = await runs.render;
    expect(stderr).to.equal("");
    expect(code).to.equal(0);
    expect(stdout).to.contain("Today's date is").and.contain("The sky over weather is clear.");
  });

  it("context-host check (node_modules/.bin) passes the consumer's plugin, checked in a worker from the compiled package", async () => {
    const { code, stdout, stderr } = await runs.check;
    expect(code, `${stdout}\n${stderr}`).to.equal(0);
    expect(stderr).to.contain("1 plugin(s) checked: 0 error(s)");
  });

  it("examples/third-party-plugin, with the tarball installed, passes its own describePluginConformance test and tsc", async () => {
    const test = await runs.pluginTest;
    expect(test.code, test.stdout + test.stderr).to.equal(0);
    // One passing test per check of `context-host check`, none failing.
    expect(test.stdout).to.match(/\b16 passing\b/);
    expect(test.stdout).not.to.contain("failing");
    const tsc = await runs.pluginTsc;
    expect(tsc.stdout + tsc.stderr).to.equal("");
    expect(tsc.code).to.equal(0);
  });
});
