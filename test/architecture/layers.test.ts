// The architecture holds: every folder of `core/` is a layer importing only the layers
// before it, the CLI sits on top, first-party plugins reach only `context-host`, no
// file imports itself through a cycle, and no file writes a field of another object's
// field (`entry.hosted.active = …`): each piece of state has one owner, asked by method.

import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { expect } from "chai";
import {
  cycles,
  farWritesOf,
  filesOf,
  graphOf,
  importsOf,
  type Layer,
  layerOf,
  layers,
  type OwnPackage,
  ownPackageOf,
  reachesInto,
  violations,
} from "./layers.ts";

const root = path.resolve(import.meta.dirname, "../..");
const layered = layers.flatMap((layer) => layer.paths.flatMap((p) => filesOf(root, p)));
/** The package itself: an import of `context-host/…` inside a layer resolves to its entry file and is refused. */
const own = ownPackageOf(root);

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
    expect(violations(graphOf(root, layered, undefined, own))).to.deep.equal([]);
  });

  it("no import cycle among the files, type imports included", () => {
    expect(cycles(graphOf(root, layered, undefined, own))).to.deep.equal([]);
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

  it("the checker refuses a layer's import of its own package by name, and follows it to the entry file", () => {
    const table: Layer[] = [
      { name: "low", paths: ["x/low"], imports: [], packages: "*" },
      { name: "entry", paths: ["x/index.ts", "x/store.ts"], imports: ["low"], packages: "*" },
    ];
    const pkg: OwnPackage = {
      name: "pkg",
      entries: new Map([
        ["pkg", "x/index.ts"],
        ["pkg/store", "x/store.ts"],
      ]),
    };
    const code: Record<string, string> = {
      "x/low/a.ts": 'import { Store } from "pkg/store";\nimport other from "pkg-other";',
      "x/store.ts": 'import { a } from "./low/a.ts";\nexport class Store {}',
      "x/index.ts": 'export * from "pkg/store";',
    };
    const read = (file: string) => code[file] as string;
    // Without the package, `pkg/store` is a package like any other, and a layer allowed every package passes.
    expect(violations(graphOf("/", Object.keys(code), read), table)).to.deep.equal([]);
    const graph = graphOf("/", Object.keys(code), read, pkg);
    expect(graph.packages.get("x/low/a.ts")).to.deep.equal(["pkg-other"]);
    expect(violations(graph, table)).to.deep.equal([
      "x/low/a.ts → x/store.ts: layer low may not import entry",
      "x/low/a.ts → pkg/store: a project file imports its own package by name; import the file by a relative path",
      "x/index.ts → pkg/store: a project file imports its own package by name; import the file by a relative path",
    ]);
    expect(cycles(graph)).to.deep.equal([["x/store.ts", "x/low/a.ts", "x/store.ts"]]);
  });

  it("the command line imports the package's entries only: an internal module of core/ is refused", () => {
    const code: Record<string, string> = {
      "scripts/cli/tool.ts": [
        'import { createHost } from "../../core/index.ts";',
        'import { SqliteSessionStore } from "../../core/store.ts";',
        'import { messageOf } from "../../core/base/errors.ts";',
        'import type { StoredMessage } from "../../core/session/store/store.ts";',
      ].join("\n"),
    };
    const graph = graphOf(root, Object.keys(code), (file) => code[file] as string, own);
    expect(violations(graph)).to.deep.equal([
      "scripts/cli/tool.ts → core/base/errors.ts: layer cli may not import base",
      "scripts/cli/tool.ts → core/session/store/store.ts: layer cli may not import session",
    ]);
  });

  it("the package's own entries resolve to their source files", () => {
    expect(own.name).to.equal("context-host");
    expect(own.entries.get("context-host")).to.equal("core/index.ts");
    expect(own.entries.get("context-host/plugin")).to.equal("core/plugin.ts");
    expect(own.entries.get("context-host/store")).to.equal("core/store.ts");
  });
});

describe("architecture: one owner per piece of state", () => {
  it("no file of core/ or the command line writes a field of another object's field (`a.b.c = …`): it asks the owner", () => {
    const files = [...filesOf(root, "core"), ...filesOf(root, "scripts/cli")];
    const writes = files.flatMap((file) => {
      const code = readFileSync(path.join(root, file), "utf8");
      return farWritesOf(code).map((target) => `${file}: ${target}`);
    });
    expect(writes).to.deep.equal([]);
  });

  it("the checker finds plain, compound and stepped writes through three segments or more, none through `this`", () => {
    const code = [
      "entry.hosted.active = next;",
      "a.b[key] += 1;",
      "a.b.c ??= 1;",
      "a.b.c >>>= 2;",
      "a.b.c++;",
      "--d.e.f;",
      "q.r().s = 1;",
      "this.#life.x = 1;",
      "this.a.b.c = 1;",
      "entry.failed = d;",
    ].join("\n");
    expect(farWritesOf(code)).to.deep.equal(["entry.hosted.active", "a.b[key]", "a.b.c", "a.b.c", "a.b.c", "d.e.f", "q.r().s"]);
    expect(farWritesOf(code, 2)).to.include("entry.failed");
  });

  it("the checker takes no comparison, arrow, declaration, type or text for a write", () => {
    const code = [
      "if (a.b.c == 1 || a.b.c >= 2 || a.b.c <= 3 || a.b.c != 4) {}",
      "const f = (x) => x.y.z;",
      "const [first, rest] = a.b.c;",
      "const settings: ns.sub.Type = {};",
      "function g(out: string[][] = [], env: NodeJS.Process.Env = process.env) {}",
      'const text = "s.t.u = 1";',
      "// k.l.m = 1",
      "const page = `x.y.z = 1`;",
      'switch (k) { case "a": break; }',
    ].join("\n");
    expect(farWritesOf(code)).to.deep.equal([]);
    expect(farWritesOf('switch (k) { case "a": a.b.c = 1; }')).to.deep.equal(["a.b.c"]);
  });
});

describe("architecture: the plugin worker's folder", () => {
  const worker = "core/plugins/worker";
  const entry = "core/plugins/worker/entry.ts";
  const read = (file: string) => readFileSync(path.join(root, file), "utf8");

  it("nothing outside core/plugins/worker imports a module inside it: the host names only its entry, by URL", () => {
    const files = ["core", "scripts", "test"].flatMap((dir) => filesOf(root, dir));
    expect(reachesInto(worker, [entry], files, read)).to.deep.equal([]);
  });

  it("the check finds an import into the folder, and lets the entry's URL pass", () => {
    const code: Record<string, string> = {
      "core/plugins/a.ts": 'import { b } from "./worker/b.ts";',
      "core/plugins/b.ts": 'import type { Entry } from "./worker/entry.ts";',
      "core/plugins/c.ts": 'const file = new URL("./worker/entry.ts", import.meta.url);',
      "core/plugins/d.ts": 'const file = new URL("./worker/other.ts", import.meta.url);',
      "core/plugins/worker/entry.ts": 'import { a } from "../a.ts";\nimport { own } from "./own.ts";',
    };
    expect(reachesInto(worker, [entry], Object.keys(code), (file) => code[file] as string)).to.deep.equal([
      "core/plugins/a.ts → core/plugins/worker/b.ts",
      "core/plugins/b.ts → core/plugins/worker/entry.ts",
      "core/plugins/d.ts → core/plugins/worker/other.ts",
    ]);
  });
});

describe("architecture: the import parser", () => {
  it("reads every import form, with $ in names and without spaces around the specifier", () => {
    const code = [
      'import { $a, b$c as $ } from "./dollar.ts";',
      'import{x}from"./tight.ts";',
      'export*from"./star.ts";',
      "import d,{e}from'./single.ts';",
      'import "./effect.ts";',
      'export * as ns from "./ns.ts";',
      'export type { T } from "./types.ts";',
      'import type $Type, * as $ns from "./type-default.ts";',
      'import { "kebab-name" as kebab } from "./string-name.ts";',
      'type Lazy = import("./lazy.ts").Lazy;',
      'const resolved = import.meta.resolve("./resolved.ts");',
    ].join("\n");
    expect(importsOf(code)).to.deep.equal([
      "./dollar.ts",
      "./tight.ts",
      "./star.ts",
      "./single.ts",
      "./effect.ts",
      "./ns.ts",
      "./types.ts",
      "./type-default.ts",
      "./string-name.ts",
      "./lazy.ts",
      "./resolved.ts",
    ]);
  });

  it("a string holding /* does not hide the imports after it until a later */", () => {
    const code =
      'const glob = "src/*.ts";\nimport { a } from "./after.ts";\nconst close = "*/";\nimport { b } from "./later.ts";';
    expect(importsOf(code)).to.deep.equal(["./after.ts", "./later.ts"]);
    // A `/*` inside a line comment opens no block comment either.
    expect(importsOf('// runs scripts/*.ts\nimport c from "./c.ts";\n// done */')).to.deep.equal(["./c.ts"]);
  });

  it("takes nothing from comments, strings, templates or regular expressions, and finds imports inside a template's code", () => {
    const code = [
      'const text = `import x from "./in-template.ts"`;',
      "const quoted = \"import y from './in-string.ts'\";",
      '/* import z from "./in-comment.ts" */',
      '// import w from "./line-comment.ts"',
      "const quote = /[\"'`]/g;",
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the source text of a template literal, on purpose
      'const inner = `${await import("./in-substitution.ts")} and ${`${"nested"}`}`;',
      'import v from "./real.ts";',
    ].join("\n");
    expect(importsOf(code)).to.deep.equal(["./in-substitution.ts", "./real.ts"]);
  });

  it("takes no import from what only looks like one", () => {
    const code = [
      'loader.import("./method.ts");',
      'const options = { import: "./property.ts" };',
      "export { a };",
      'export const from = "./constant.ts";',
      "export {};",
      'import json = require("./required.ts");',
    ].join("\n");
    expect(importsOf(code)).to.deep.equal([]);
  });

  it("reads a worker entry from new URL(…, import.meta.url), a literal or each branch of a condition", () => {
    const code = [
      'new Worker(new URL("./worker.ts", import.meta.url));',
      'new Worker(new URL("sibling.mjs", import.meta.url));',
      'const entry = new URL(import.meta.url.endsWith(".ts") ? "./entry.ts" : "./entry.js", import.meta.url);',
      'const folder = new URL("../fixtures/", import.meta.url);',
      'const page = new URL("/x.ts", "http://localhost");',
      'const absolute = new URL("file:///x.ts", import.meta.url);',
    ].join("\n");
    expect(importsOf(code)).to.deep.equal(["./worker.ts", "./sibling.mjs", "./entry.ts"]);
    const table: Layer[] = [
      { name: "low", paths: ["x/low"], imports: [], packages: [] },
      { name: "high", paths: ["x/high"], imports: ["low"], packages: [] },
    ];
    const files: Record<string, string> = {
      "x/low/a.ts": 'const worker = new URL(import.meta.url.endsWith(".ts") ? "../high/w.ts" : "../high/w.js", import.meta.url);',
      "x/high/w.ts": "export {};",
    };
    const graph = graphOf("/", Object.keys(files), (file) => files[file] as string);
    expect(violations(graph, table)).to.deep.equal(["x/low/a.ts → x/high/w.ts: layer low may not import high"]);
  });
});
