// The architecture holds: every folder of `core/` is a layer importing only the layers
// before it, the CLI sits on top, first-party plugins reach only `context-host`, and no
// file imports itself through a cycle.

import { readdirSync } from "node:fs";
import path from "node:path";
import { expect } from "chai";
import { cycles, filesOf, graphOf, importsOf, type Layer, layerOf, layers, violations } from "./layers.ts";

const root = path.resolve(import.meta.dirname, "../..");
const layered = layers.flatMap((layer) => layer.paths.flatMap((p) => filesOf(root, p)));

describe("architecture: layers", () => {
  it("every file of core/ belongs to a layer, and every folder of core/ is one", () => {
    const core = filesOf(root, "core");
    expect(core.filter((file) => layerOf(file) === undefined)).to.deep.equal([]);
    const folders = readdirSync(path.join(root, "core"), { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name)
      .sort();
    expect(folders).to.deep.equal(
      layers
        .flatMap((layer) => layer.paths)
        .filter((p) => p.startsWith("core/") && !p.endsWith(".ts"))
        .map((p) => p.slice("core/".length))
        .sort(),
    );
  });

  it("each layer imports only the layers listed for it, which come before it", () => {
    layers.forEach((layer, index) => {
      const earlier = layers.slice(0, index).map((l) => l.name);
      expect(
        layer.imports.filter((name) => !earlier.includes(name)),
        layer.name,
      ).to.deep.equal([]);
    });
    expect(violations(graphOf(root, layered))).to.deep.equal([]);
  });

  it("no import cycle among the files, type imports included", () => {
    expect(cycles(graphOf(root, layered))).to.deep.equal([]);
  });

  it("first-party plugins import the plugin API by its package name, never the core's files", () => {
    const plugins = filesOf(root, "plugins");
    const graph = graphOf(root, plugins);
    const outside = [...graph.edges].flatMap(([file, targets]) =>
      targets.filter((t) => !t.startsWith("plugins/")).map((t) => `${file} → ${t}`),
    );
    expect(outside).to.deep.equal([]);
    const packages = [...graph.packages.values()].flat().filter((s) => s.startsWith("context-host"));
    expect(packages.length).to.be.greaterThan(0);
    expect(packages.filter((s) => s !== "context-host" && s !== "context-host/plugin")).to.deep.equal([]);
  });

  it("the checker itself finds a backward import, a package a layer may not use, and a cycle", () => {
    const table: Layer[] = [
      { name: "low", paths: ["x/low"], imports: [], packages: [] },
      { name: "high", paths: ["x/high"], imports: ["low"], packages: "*" },
    ];
    const code: Record<string, string> = {
      "x/low/a.ts": 'import { b } from "../high/b.ts";\nimport fs from "node:fs";',
      "x/high/b.ts": 'import type { a } from "../low/a.ts";\nexport { c } from "./c.ts";',
      "x/high/c.ts": 'const later = await import("./b.ts");',
    };
    const graph = graphOf("/", Object.keys(code), (file) => code[file] as string);
    expect(violations(graph, table)).to.deep.equal([
      "x/low/a.ts → x/high/b.ts: layer low may not import high",
      "x/low/a.ts → node:fs: layer low may not import node:fs",
    ]);
    expect(cycles(graph)).to.deep.equal([
      ["x/high/b.ts", "x/low/a.ts", "x/high/b.ts"],
      ["x/high/b.ts", "x/high/c.ts", "x/high/b.ts"],
    ]);
    expect(importsOf('// import "./commented.ts"\nimport {\n  a,\n  type B,\n} from "./multi.ts";')).to.deep.equal([
      "./multi.ts",
    ]);
  });
});
