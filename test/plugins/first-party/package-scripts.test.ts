// The first-party `package-scripts` plugin, loaded by the real PluginSet from plugins/,
// reading real package.json files in temp folders.

import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { expect } from "chai";
import { scriptsOf, truncate } from "../../../plugins/package-scripts/read.ts";
import { initialize, type LoadedPlugin, loadPlugin, reconcile, tempFolder } from "./harness.ts";

const key = "package-scripts/scripts";

function writePackage(folder: string, manifest: unknown): string {
  const file = path.join(folder, "package.json");
  writeFileSync(file, typeof manifest === "string" ? manifest : `${JSON.stringify(manifest, null, 2)}\n`);
  return file;
}

describe("plugin package-scripts", () => {
  let plugin: LoadedPlugin;
  let temp: ReturnType<typeof tempFolder>;
  let project: string;

  before(async () => {
    plugin = await loadPlugin("package-scripts");
  });
  after(async () => {
    await plugin?.close();
  });
  beforeEach(() => {
    temp = tempFolder("scripts");
    // The temp folder is the project root: nothing above it is looked at.
    mkdirSync(path.join(temp.path, ".git"));
    project = path.join(temp.path, "app");
    mkdirSync(project);
  });
  afterEach(() => temp.remove());

  it("loads from plugins/ with its one source and no diagnostics", () => {
    const info = plugin.host.plugins().find((p) => p.name === "package-scripts");
    expect(info?.keys).to.deep.equal([key]);
    expect(plugin.host.diagnostics).to.deep.equal([]);
  });

  it("renders the scripts of the package.json in the working folder as a short list", async () => {
    const file = writePackage(project, {
      name: "my-app",
      packageManager: "pnpm@9.1.0",
      scripts: { build: "tsc -p .", test: "mocha\n  --exit" },
      dependencies: { x: "1" },
    });
    const generation = await initialize(await plugin.compose(project));
    expect(generation.baseline).to.equal(
      `Package scripts (my-app, ${file}; package manager pnpm@9.1.0):\n- build: tsc -p .\n- test: mocha --exit`,
    );
    expect(generation.snapshot[key]).to.deep.equal({
      value: {
        name: "my-app",
        directory: project,
        scripts: [
          { name: "build", command: "tsc -p ." },
          { name: "test", command: "mocha --exit" },
        ],
        omitted: 0,
        packageManager: "pnpm@9.1.0",
      },
      removed: `${file} no longer exists; its package scripts no longer apply.`,
    });
  });

  it("finds the nearest package.json at or above the working folder", async () => {
    writePackage(project, { name: "outer", scripts: { lint: "biome check" } });
    const deep = path.join(project, "src", "lib");
    mkdirSync(deep, { recursive: true });
    const fromDeep = await initialize(await plugin.compose(deep));
    expect(fromDeep.baseline).to.equal(`Package scripts (outer, ${path.join(project, "package.json")}):\n- lint: biome check`);

    const inner = path.join(project, "packages", "inner");
    mkdirSync(inner, { recursive: true });
    writePackage(inner, { name: "inner", scripts: { dev: "vite" } });
    const fromInner = await initialize(await plugin.compose(inner));
    expect(fromInner.baseline).to.equal(`Package scripts (inner, ${path.join(inner, "package.json")}):\n- dev: vite`);
  });

  it("a package without name or scripts still says where it is and that there are none", async () => {
    const file = writePackage(project, { private: true });
    const generation = await initialize(await plugin.compose(project));
    expect(generation.baseline).to.equal(`Package scripts (${file}):\n(none)`);
  });

  it("changed scripts produce one update with the complete new list; a reformatted file with the same scripts is unchanged", async () => {
    const file = writePackage(project, { name: "my-app", scripts: { build: "tsc", test: "mocha" } });
    const generation = await initialize(await plugin.compose(project));

    writeFileSync(file, JSON.stringify({ scripts: { build: "tsc", test: "mocha" }, name: "my-app" }));
    expect(await reconcile(await plugin.compose(project), generation.snapshot)).to.deep.equal({ kind: "unchanged" });

    writePackage(project, { name: "my-app", scripts: { build: "tsc -b", test: "mocha", bench: "tsx bench.ts" } });
    const result = await reconcile(await plugin.compose(project), generation.snapshot);
    expect(result.kind).to.equal("updated");
    if (result.kind !== "updated") return;
    expect(result.text).to.equal(
      `Package scripts are now (my-app, ${file}):\n- build: tsc -b\n- test: mocha\n- bench: tsx bench.ts`,
    );
    expect(await reconcile(await plugin.compose(project), result.snapshot)).to.deep.equal({ kind: "unchanged" });
  });

  it("a removed package.json emits its removal text once", async () => {
    const file = writePackage(project, { name: "my-app", scripts: { build: "tsc" } });
    const generation = await initialize(await plugin.compose(project));
    rmSync(file);
    const result = await reconcile(await plugin.compose(project), generation.snapshot);
    expect(result).to.deep.equal({
      kind: "updated",
      text: `${file} no longer exists; its package scripts no longer apply.`,
      snapshot: {},
      change: { written: [], removed: ["package-scripts/scripts"] },
    });
    if (result.kind !== "updated") return;
    expect(await reconcile(await plugin.compose(project), result.snapshot)).to.deep.equal({ kind: "unchanged" });
  });

  it("never looks above the project root: a package.json outside the project is not the project's", async () => {
    const outer = tempFolder("scripts-outer");
    try {
      writePackage(outer.path, { name: "outer", scripts: { build: "make" } });
      const inner = path.join(outer.path, "repo", "src");
      mkdirSync(inner, { recursive: true });
      mkdirSync(path.join(outer.path, "repo", ".git"));
      expect(await initialize(await plugin.compose(inner))).to.deep.equal({ baseline: "", snapshot: {} });
    } finally {
      outer.remove();
    }
  });

  it("is absent when there is no package.json between the working folder and the project root", async () => {
    expect(await initialize(await plugin.compose(project))).to.deep.equal({ baseline: "", snapshot: {} });
  });

  it("invalid JSON (a file mid-write) is unavailable: left out at first, the admitted scripts kept later, each failure logged once", async () => {
    const file = writePackage(project, '{ "name": "my-app", "scripts": { "build": "ts');
    expect(await initialize(await plugin.compose(project))).to.deep.equal({ baseline: "", snapshot: {} });
    expect(plugin.host.diagnostics).to.deep.equal([]);

    writePackage(project, { name: "my-app", scripts: { build: "tsc" } });
    const generation = await initialize(await plugin.compose(project));
    expect(generation.baseline).to.equal(`Package scripts (my-app, ${file}):\n- build: tsc`);

    const warnings = () => plugin.logged.filter((line) => line.startsWith("warn: package-scripts/scripts is unavailable"));
    const before = warnings().length;
    for (const broken of ["", '{ "name": "my-app", "scr', '{ "name": "my-app", "scr']) {
      writeFileSync(file, broken);
      expect(await reconcile(await plugin.compose(project), generation.snapshot)).to.deep.equal({ kind: "unchanged" });
    }
    // One warning per distinct failure, not one per boundary.
    const added = warnings().slice(before);
    expect(added).to.have.length(2);
    expect(added.every((line) => line.includes(file) && line.includes("invalid JSON"))).to.equal(true);

    writePackage(project, { name: "my-app", scripts: { build: "tsc", watch: "tsc -w" } });
    const recovered = await reconcile(await plugin.compose(project), generation.snapshot);
    expect(recovered.kind === "updated" && recovered.text).to.equal(
      `Package scripts are now (my-app, ${file}):\n- build: tsc\n- watch: tsc -w`,
    );
  });

  it("scripts named constructor or __proto__ are kept and admitted (stored as name/command pairs)", async () => {
    writePackage(
      project,
      '{ "name": "odd", "scripts": { "constructor": "echo c", "__proto__": "echo p", "toString": "echo t" } }',
    );
    const generation = await initialize(await plugin.compose(project));
    expect(plugin.host.diagnostics).to.deep.equal([]);
    expect(generation.snapshot[key]?.value).to.deep.include({
      scripts: [
        { name: "constructor", command: "echo c" },
        { name: "__proto__", command: "echo p" },
        { name: "toString", command: "echo t" },
      ],
    });
    expect(generation.baseline).to.match(/- constructor: echo c\n- __proto__: echo p\n- toString: echo t$/);
    // The snapshot survives a JSON round trip with the same value.
    expect(JSON.parse(JSON.stringify(generation.snapshot))).to.deep.equal(generation.snapshot);
  });

  it("truncates to 40 scripts and 200-character commands by default, saying how many were left out", async () => {
    const scripts: Record<string, string> = {};
    for (let i = 0; i < 55; i++) scripts[`s${String(i).padStart(2, "0")}`] = i === 0 ? "x".repeat(500) : `run ${i}`;
    writePackage(project, { name: "big", scripts });
    const generation = await initialize(await plugin.compose(project));
    const value = generation.snapshot[key]?.value as { scripts: Array<{ name: string; command: string }>; omitted: number };
    expect(value.scripts).to.have.length(40);
    expect(value.omitted).to.equal(15);
    expect(value.scripts[0]?.command).to.equal(`${"x".repeat(199)}…`);
    expect(generation.baseline.split("\n").at(-1)).to.equal("- … and 15 more");
  });

  it("settles malformed fields without failing: non-object JSON, non-object scripts, non-string commands", () => {
    const limits = { maxScripts: 40, maxCommandLength: 200 };
    expect(scriptsOf([1, 2], "/p", limits)).to.deep.equal({ name: null, directory: "/p", scripts: [], omitted: 0 });
    expect(scriptsOf({ name: 3, scripts: ["a"] }, "/p", limits)).to.deep.equal({
      name: null,
      directory: "/p",
      scripts: [],
      omitted: 0,
    });
    expect(scriptsOf({ name: "n", scripts: { a: 1, b: "ok", c: null } }, "/p", limits).scripts).to.deep.equal([
      { name: "b", command: "ok" },
    ]);
    expect(truncate("abcdef", 4)).to.equal("abc…");
    expect(truncate("abcd", 4)).to.equal("abcd");
  });

  describe("with settings", () => {
    let configured: LoadedPlugin | undefined;
    afterEach(async () => {
      await configured?.close();
      configured = undefined;
    });

    it("maxScripts and maxCommandLength come from the plugin's config", async () => {
      writePackage(project, { name: "cfg", scripts: { a: "0123456789abcdef", b: "b", c: "c" } });
      configured = await loadPlugin("package-scripts", { "package-scripts": { maxScripts: 2, maxCommandLength: 10 } });
      const generation = await initialize(await configured.compose(project));
      expect(generation.baseline).to.equal(
        `Package scripts (cfg, ${path.join(project, "package.json")}):\n- a: 012345678…\n- b: b\n- … and 1 more`,
      );
    });
  });
});
