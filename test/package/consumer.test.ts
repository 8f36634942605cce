// The package as a user gets it: `npm pack` (which builds dist/ through `prepack`), the
// tarball installed into a temp project that has no dev tools, then plain `node` runs a
// host with a plugin of the consumer's own, `tsc` type-checks a consumer of every entry
// point, and the `context-host` program runs: through `npx` once, then through the link
// in node_modules/.bin that npx finds (as a package.json script runs it; npx itself costs
// ~0.7 s of CPU a run). `tsc` checks a second consumer with no Node.js types at all, which
// imports every `exports` entry of package.json. An error thrown by the library is traced
// to a readable line of dist/ and, through its source map, to the TypeScript source that
// ships beside it. A second project, a copy of examples/third-party-plugin, gets the same
// tarball and runs its author's own test (`describePluginConformance` under mocha) and
// `tsc`; another, a copy of examples/third-party-registry, runs `describeRegistryConformance`
// on its own registry and `tsc`. No project installs fast-check itself: it comes with the
// package, as its dependency. A host project installs
// examples/third-party-plugin packed as a package
// (context-host-plugin-tides) next to the packed context-host, names it in its settings file
// and loads it by name; its packed updates (a newer version, one for another context-host)
// are installed as `npm update` would.
//
// Installing is done the way npm lays a tarball out, without the network and without
// rebuilding better-sqlite3 (50 s): the tarball is unpacked into node_modules/context-host,
// each of its `dependencies` is linked from this project's node_modules (optional peers
// are not: npm does not install them either), and its `bin`
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
  writeFileSync,
} from "node:fs";
import { SourceMap } from "node:module";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { expect } from "chai";
import { checkNames } from "../../core/conformance/rules.ts";

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, "../..");
const fixture = path.join(import.meta.dirname, "consumer");
const thirdParty = path.join(root, "examples", "third-party-plugin");
const thirdPartyRegistry = path.join(root, "examples", "third-party-registry");
const tidesFixture = path.join(import.meta.dirname, "tides-host");
const manifest = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")) as {
  name: string;
  version: string;
  exports: Record<string, unknown>;
};

/**
 * A module importing every `exports` entry but package.json, so that a new entry is
 * type-checked without Node.js types as soon as package.json names it.
 */
function everyEntryModule(): string {
  const entries = Object.keys(manifest.exports).filter((subpath) => subpath !== "./package.json");
  const lines = entries.map((subpath, index) => {
    const specifier = subpath === "." ? manifest.name : `${manifest.name}/${subpath.slice(2)}`;
    return `import * as entry${index} from ${JSON.stringify(specifier)};`;
  });
  const names = entries.map((_, index) => `entry${index}`).join(", ");
  return `// Written by test/package/consumer.test.ts from package.json \`exports\`.\n${lines.join("\n")}\nexport { ${names} };\n`;
}

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

/** Packs the package at `from` (building it, for this one) into `folder` and returns the tarball and what it lists. */
async function pack(folder: string, from = root): Promise<{ tarball: string; files: PackedFile[]; unpackedSize: number }> {
  const { stdout } = await run("npm", ["pack", "--json", "--pack-destination", folder], { cwd: from, maxBuffer: 16 << 20 });
  // `prepack` prints the build's output before npm's JSON.
  const [report] = JSON.parse(stdout.slice(stdout.indexOf("[\n"))) as {
    filename: string;
    files: PackedFile[];
    unpackedSize: number;
  }[];
  if (report === undefined) throw new Error(`npm pack printed no report: ${stdout}`);
  return { tarball: path.join(folder, report.filename), files: report.files, unpackedSize: report.unpackedSize };
}

/**
 * Packs a copy of examples/third-party-plugin as it would be published after `edit` (of
 * its package.json and its plugin's text), in a folder of its own under `folder`.
 */
async function packPlugin(
  folder: string,
  name: string,
  edit: (manifest: Record<string, unknown>, plugin: string) => [object, string],
) {
  const copy = path.join(folder, name);
  cpSync(thirdParty, copy, { recursive: true });
  const manifestFile = path.join(copy, "package.json");
  const pluginFile = path.join(copy, "plugins", "tides.ts");
  const [edited, plugin] = edit(JSON.parse(readFileSync(manifestFile, "utf8")), readFileSync(pluginFile, "utf8"));
  writeFileSync(manifestFile, JSON.stringify(edited, null, 2));
  writeFileSync(pluginFile, plugin);
  mkdirSync(path.join(folder, `${name}-tarball`));
  return pack(path.join(folder, `${name}-tarball`), copy);
}

/** Installs `tarball` into `project` as npm would lay it out (see the file comment), as package `name`. */
async function install(tarball: string, project: string, name = manifest.name): Promise<void> {
  const modules = path.join(project, "node_modules");
  const target = path.join(modules, name);
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
  for (const [binName, file] of Object.entries(installed.bin ?? {})) {
    chmodSync(path.join(target, file), 0o755);
    symlinkSync(path.join("..", name, file), path.join(modules, ".bin", binName));
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
async function typecheck(project: string, name: string, config = "tsconfig.json") {
  const tsc = path.join(root, "node_modules", "typescript", "bin", "tsc");
  const state = path.join(project, `${name}.tsbuildinfo`);
  const kept = path.join(root, "node_modules", ".cache", "context-host", `consumer-${name}.tsbuildinfo`);
  if (existsSync(kept)) copyFileSync(kept, state);
  const result = await inProject(project, process.execPath, [
    tsc,
    ...["--noEmit", "-p", config, "--singleThreaded", "--incremental", "--tsBuildInfoFile", state],
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

/** A program that makes the library throw (`SettingInvalid`: a time zone that is a number) and prints the stack. */
const badEngineOption = `import { createContextEngine } from "context-host";
await createContextEngine({ timeZone: 42 }).then(
  () => console.log("created"),
  (error) => console.log(error.name + "\\n" + error.stack),
);`;

describe("package: a consumer project using the packed tarball", function () {
  // A bound for a hang, not a speed goal: on 2 busy cores packing and the 20 commands take over a minute.
  this.timeout(180_000);
  let installed: Installed;
  /** The packed example plugin: what its tarball lists. */
  let pluginFiles: readonly string[];
  /** The consumer's commands, started together once installed (each never rejects); the tests check their results. */
  let runs: Record<
    | "host"
    | "internal"
    | "tsc"
    | "tscNoNodeTypes"
    | "version"
    | "render"
    | "check"
    | "pluginTest"
    | "pluginTsc"
    | "stack"
    | "stackMapped"
    | "registryTest"
    | "registryTsc"
    | "tidesRender"
    | "tidesList"
    | "tidesReload"
    | "mcpMissing"
    | "pgMissing",
    ReturnType<typeof inProject>
  >;

  before(async () => {
    const folder = realpathSync(mkdtempSync(path.join(os.tmpdir(), "context-host-consumer-")));
    const project = path.join(folder, "project");
    cpSync(fixture, project, { recursive: true });
    // The example plugin as published, a newer version of it, and one for another context-host.
    const [packed, tides, newer, incompatible] = await Promise.all([
      pack(folder),
      packPlugin(folder, "tides-1.0.0", (manifest, plugin) => [manifest, plugin]),
      packPlugin(folder, "tides-1.0.1", (manifest, plugin) => [
        { ...manifest, version: "1.0.1" },
        plugin.replace("`Next high water at ", "`High water next at "),
      ]),
      packPlugin(folder, "tides-2.0.0", (manifest, plugin) => [
        { ...manifest, version: "2.0.0", peerDependencies: { "context-host": ">=99" } },
        plugin,
      ]),
    ]);
    pluginFiles = tides.files.map((file) => file.path);
    await install(packed.tarball, project);
    const plugin = path.join(folder, "third-party-plugin");
    cpSync(thirdParty, plugin, { recursive: true });
    await install(packed.tarball, plugin);
    const tidesHost = path.join(folder, "tides-host");
    cpSync(tidesFixture, tidesHost, { recursive: true });
    await install(packed.tarball, tidesHost);
    await install(tides.tarball, tidesHost, "context-host-plugin-tides");
    for (const tool of ["mocha", "tsx", "@types/node"]) linkDevDependency(plugin, tool);
    const registry = path.join(folder, "third-party-registry");
    cpSync(thirdPartyRegistry, registry, { recursive: true });
    await install(packed.tarball, registry);
    for (const tool of ["mocha", "tsx", "@types/node"]) linkDevDependency(registry, tool);
    writeFileSync(path.join(project, "every-entry.ts"), everyEntryModule());
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
      tscNoNodeTypes: typecheck(project, "project-no-node-types", "tsconfig.no-node-types.json"),
      stack: inProject(project, process.execPath, ["--input-type=module", "--eval", badEngineOption]),
      stackMapped: inProject(project, process.execPath, [
        "--enable-source-maps",
        "--input-type=module",
        "--eval",
        badEngineOption,
      ]),
      version: inProject(project, "npx", ["--no-install", "context-host", "--version"]),
      render: inProject(project, bin, ["render", "--plugins", "plugins"]),
      check: inProject(project, bin, ["check", "plugins"]),
      pluginTest: inProject(plugin, process.execPath, [
        path.join("node_modules", "mocha", "bin", "mocha.js"),
        "--reporter",
        "dot",
      ]),
      pluginTsc: typecheck(plugin, "third-party-plugin"),
      registryTest: inProject(registry, process.execPath, [
        path.join("node_modules", "mocha", "bin", "mocha.js"),
        "--reporter",
        "dot",
      ]),
      registryTsc: typecheck(registry, "third-party-registry"),
      tidesRender: inProject(tidesHost, path.join(tidesHost, "node_modules", ".bin", "context-host"), ["render"]),
      tidesList: inProject(tidesHost, path.join(tidesHost, "node_modules", ".bin", "context-host"), ["plugins"]),
      tidesReload: inProject(tidesHost, process.execPath, [
        "reload.mjs",
        path.join(folder, "tides-data"),
        newer.tarball,
        incompatible.tarball,
      ]),
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
      // pg is an optional peer the consumer did not install (decision 151).
      pgMissing: inProject(project, process.execPath, [
        "--input-type=module",
        "--eval",
        `import { existsSync } from "node:fs";
import { PostgresClientMissing, PostgresSessionStore } from "context-host/store";
const connectionString = "postgres://nobody@127.0.0.1:1/nowhere";
console.log(existsSync("node_modules/pg"));
for (const open of [() => PostgresSessionStore.open({ connectionString })]) {
  await open().then(
    () => console.log("opened"),
    (error) => console.log(error instanceof PostgresClientMissing, error.message),
  );
}`,
      ]),
    };
    await Promise.all(Object.values(runs));
  });
  after(() => {
    if (installed !== undefined) rmSync(installed.folder, { recursive: true, force: true });
  });

  it("only what users run or read ships: dist/ with its maps, the TypeScript sources they map to, the program, README.md, LICENSE and package.json", () => {
    const paths = installed.files.map((file) => file.path);
    const kind = (file: string) =>
      file.startsWith("dist/")
        ? `dist/*${file.replace(/^.*?(\.d\.ts\.map|\.d\.ts|\.js\.map|\.js)$/, "$1")}`
        : file.startsWith("core/") || file.startsWith("scripts/cli/")
          ? `${file.split("/")[0]}/*${path.extname(file)}`
          : file;
    expect([...new Set(paths.map(kind))].sort()).to.deep.equal([
      "LICENSE",
      "README.md",
      "bin/context-host.mjs",
      "core/*.ts",
      "dist/*.d.ts",
      "dist/*.d.ts.map",
      "dist/*.js",
      "dist/*.js.map",
      "package.json",
      "scripts/*.ts",
    ]);
    expect(paths.filter((file) => /(^|[/.-])(test|tests|fixtures?|bench(es)?)([/.-]|$)/.test(file))).to.deep.equal([]);
    // Every map of the JavaScript and of the declarations points at a source that ships.
    const shipped = new Set(paths);
    const unresolved = paths
      .filter((file) => file.endsWith(".map"))
      .flatMap((file) => {
        const map = JSON.parse(readFileSync(path.join(installed.project, "node_modules", manifest.name, file), "utf8")) as {
          sources: string[];
        };
        return map.sources.map((source) => path.posix.join(path.posix.dirname(file), source));
      })
      .filter((source) => !shipped.has(source));
    expect(unresolved).to.deep.equal([]);
  });

  it("an error thrown by the installed library points at a readable line of dist/, which its source map takes to the TypeScript source", async () => {
    const { code, stdout, stderr } = await runs.stack;
    expect([code, stderr]).to.deep.equal([0, ""]);
    expect(stdout.split("\n")[0]).to.equal("SettingInvalid");
    const target = path.join(installed.project, "node_modules", manifest.name);
    // The first frame of the library that is not an error class's constructor: where it threw.
    const frame = /at (?!new )\S+ \(file:\/\/\S*?node_modules\/context-host\/(dist\/\S+\.js):(\d+):(\d+)\)/.exec(stdout);
    expect(frame, stdout).not.to.equal(null);
    const [, file, line, column] = frame as unknown as [string, string, string, string];
    const written = readFileSync(path.join(target, file), "utf8").split("\n")[Number(line) - 1] as string;
    expect(written).to.contain("SettingInvalid");
    expect(written.length, written).to.be.below(200);
    const map = new SourceMap(JSON.parse(readFileSync(path.join(target, `${file}.map`), "utf8")));
    const entry = map.findEntry(Number(line) - 1, Number(column) - 1) as { originalSource: string; originalLine: number };
    const source = path.resolve(path.dirname(path.join(target, file)), entry.originalSource);
    expect(path.relative(target, source)).to.match(/^core\/.+\.ts$/);
    expect(readFileSync(source, "utf8").split("\n")[entry.originalLine]).to.contain("SettingInvalid");
  });

  it("with --enable-source-maps the same stack names the TypeScript source in the package, line and column", async () => {
    const { code, stdout, stderr } = await runs.stackMapped;
    expect([code, stderr]).to.deep.equal([0, ""]);
    expect(stdout).to.match(/node_modules\/context-host\/core\/\S+\.ts:\d+:\d+/);
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

  it("the packed package.json has no install-time scripts (a consumer's npm has nothing of ours to allow or warn about)", () => {
    const installedManifest = JSON.parse(
      readFileSync(path.join(installed.project, "node_modules", manifest.name, "package.json"), "utf8"),
    ) as { scripts?: Record<string, string> };
    const scripts = Object.keys(installedManifest.scripts ?? {});
    expect(scripts.filter((name) => ["preinstall", "install", "postinstall", "prepare"].includes(name))).to.deep.equal([]);
  });

  it("tsc type-checks a consumer of every exports entry with no Node.js types (types: [], the package's declarations checked too)", async () => {
    const { code, stdout, stderr } = await runs.tscNoNodeTypes;
    expect(stdout + stderr).to.equal("");
    expect(code).to.equal(0);
  });

  it("mcpServers without the optional MCP client fails createHost with McpClientMissing, saying what to install", async () => {
    const { code, stdout, stderr } = await runs.mcpMissing;
    expect([code, stderr]).to.deep.equal([0, ""]);
    expect(stdout).to.equal(
      "true mcpServers needs the MCP client: install it with `npm install @modelcontextprotocol/client@^2.4.0`\n",
    );
  });

  it("pg is an optional peer: not installed with the package, and opening a PostgreSQL store without it says to install it", async () => {
    const { code, stdout, stderr } = await runs.pgMissing;
    expect([code, stderr]).to.deep.equal([0, ""]);
    expect(stdout).to.equal(
      "false\n" + "true PostgresSessionStore.open needs the PostgreSQL client: install it with `npm install pg@^8.23.1`\n",
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

  it("context-host check (node_modules/.bin) passes the consumer's plugin with context-host alone installed (fast-check comes with it)", async () => {
    expect(existsSync(path.join(installed.project, "node_modules", "fast-check"))).to.equal(true);
    expect(realpathSync(path.join(installed.project, "node_modules", "fast-check"))).to.equal(
      realpathSync(path.join(root, "node_modules", "fast-check")),
    );
    const { code, stdout, stderr } = await runs.check;
    expect(code, `${stdout}\n${stderr}`).to.equal(0);
    expect(stderr).to.contain("1 plugin(s) checked: 0 error(s)");
  });

  it("examples/third-party-plugin, with the tarball installed, passes its own describePluginConformance test and tsc", async () => {
    const test = await runs.pluginTest;
    expect(test.code, test.stdout + test.stderr).to.equal(0);
    // One passing test per rule of `context-host check`, none failing.
    expect(test.stdout).to.match(new RegExp(`\\b${checkNames.length} passing\\b`));
    expect(test.stdout).not.to.contain("failing");
    const tsc = await runs.pluginTsc;
    expect(tsc.stdout + tsc.stderr).to.equal("");
    expect(tsc.code).to.equal(0);
  });

  it("examples/third-party-registry, with the tarball installed, passes its own describeRegistryConformance test and tsc", async () => {
    const test = await runs.registryTest;
    expect(test.code, test.stdout + test.stderr).to.equal(0);
    // One passing test per registry rule, none failing.
    expect(test.stdout).to.match(/\b9 passing\b/);
    expect(test.stdout).not.to.contain("failing");
    const tsc = await runs.registryTsc;
    expect(tsc.stdout + tsc.stderr).to.equal("");
    expect(tsc.code).to.equal(0);
  });

  it("examples/third-party-plugin packs as a publishable plugin package: its manifest, its README and its plugin, nothing else", () => {
    expect([...pluginFiles].sort()).to.deep.equal(["README.md", "package.json", "plugins/tides.ts"]);
    const example = JSON.parse(readFileSync(path.join(thirdParty, "package.json"), "utf8"));
    expect(example.private).to.equal(undefined);
    expect(example["context-host"]).to.deep.equal({ plugins: ["plugins/tides.ts"] });
  });

  it("a host project with the packed plugin package installed and named in its settings has its source in the Baseline", async () => {
    const { code, stdout, stderr } = await runs.tidesRender;
    expect(stderr).to.equal("");
    expect(code).to.equal(0);
    expect(stdout).to.contain("Next high water at Brest: 06:12, 6.1 m.");
  });

  it("context-host plugins lists the package's plugin with the package and version it came from", async () => {
    const { code, stdout, stderr } = await runs.tidesList;
    expect([code, stderr]).to.deep.equal([0, ""]);
    expect(stdout.trim()).to.equal(
      "tides  context-host-plugin-tides@1.0.0  node_modules/context-host-plugin-tides/plugins/tides.ts",
    );
  });

  it("updating the installed package reloads its plugin; a version for another context-host is unloaded with a diagnostic", async () => {
    const { code, stdout, stderr } = await runs.tidesReload;
    expect(code, stderr).to.equal(0);
    const report = JSON.parse(stdout) as {
      baseline: string;
      loaded: Array<{ name: string; generation: number; version: string }>;
      updated: Array<{ name: string; generation: number; version: string }>;
      updatedBaseline: string;
      refused: Array<{ plugin: string; phase: string; message: string }>;
    };
    expect(report.baseline).to.contain("Next high water at Brest: 06:12, 6.1 m.");
    expect(report.loaded).to.deep.equal([{ name: "tides", generation: 1, version: "1.0.0" }]);
    expect(report.updated.map(({ name, version }) => [name, version])).to.deep.equal([["tides", "1.0.1"]]);
    expect(report.updated[0]?.generation).to.be.above(1);
    expect(report.updatedBaseline).to.contain("High water next at Brest: 06:12, 6.1 m.");
    expect(report.refused).to.deep.equal([
      {
        plugin: "context-host-plugin-tides",
        phase: "package",
        message: `context-host-plugin-tides@2.0.0: needs context-host >=99 (peerDependencies), but this host is context-host ${manifest.version}; its plugins are not loaded`,
      },
    ]);
  });
});
