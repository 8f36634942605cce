// The entry points, from their sources: one file per `exports` path, each name exported
// from one place, the plugin entry exactly the plugin API module bundles get, and TSDoc
// on every exported declaration.

import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { expect } from "chai";
import * as hostEntry from "../../core/index.ts";
import * as pluginEntry from "../../core/plugin.ts";
import * as pluginApi from "../../core/plugins/api.ts";
import { layers } from "../architecture/layers.ts";

const root = path.resolve(import.meta.dirname, "../..");
const manifest = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")) as {
  exports: Record<string, string | { "context-host-source": string; types: string; default: string }>;
};
const entries = Object.entries(manifest.exports).flatMap(([subpath, target]) =>
  typeof target === "string" ? [] : [{ subpath, source: path.normalize(target["context-host-source"]), target }],
);

/**
 * Names shared by more than one entry, on purpose: `definePlugin` and the `SystemContext`
 * loader values stay importable from `context-host` for existing plugins; the plugin entry
 * is the plugin API module and shares the System Context vocabulary with the pure core.
 */
const shared: Readonly<Record<string, readonly string[]>> = {
  definePlugin: [".", "./plugin"],
  SystemContext: [".", "./plugin", "./system-context"],
  absent: ["./plugin", "./system-context"],
  unavailable: ["./plugin", "./system-context"],
  Json: ["./plugin", "./system-context"],
  Key: ["./plugin", "./system-context"],
  Loaded: ["./plugin", "./system-context"],
  // What a registry's `compose` and each registration's `load` get: with the other types a registry implements (decision 113).
  SourceEnv: ["./plugin", "./conformance"],
};

interface Exported {
  readonly name: string;
  /** The file the name is declared in (or re-exported as a namespace from). */
  readonly file: string;
  /** The name in that file. */
  readonly local: string;
}

/** The names a source file exports, each followed to the file that declares it. */
function exportsOf(file: string): Exported[] {
  const code = readFileSync(path.join(root, file), "utf8").replace(/\/\*[\s\S]*?\*\//g, "");
  const resolve = (specifier: string) => path.normalize(path.join(path.dirname(file), specifier));
  const found: Exported[] = [];
  for (const [, list, from] of code.matchAll(/export\s+(?:type\s+)?\{([^}]*)\}\s*from\s*"([^"]+)"/g)) {
    for (const item of (list as string).split(",").map((s) => s.trim().replace(/^type\s+/, ""))) {
      if (item === "") continue;
      const [local, alias] = item.split(/\s+as\s+/) as [string, string | undefined];
      const inner = exportsOf(resolve(from as string)).find((e) => e.name === local);
      found.push({ name: alias ?? local, file: inner?.file ?? resolve(from as string), local: inner?.local ?? local });
    }
  }
  for (const [, from] of code.matchAll(/export\s+\*\s+from\s*"([^"]+)"/g)) found.push(...exportsOf(resolve(from as string)));
  for (const [, name] of code.matchAll(/export\s+\*\s+as\s+(\w+)\s+from/g))
    found.push({ name: name as string, file, local: name as string });
  for (const [, name] of code.matchAll(
    /export\s+(?:declare\s+)?(?:async\s+)?(?:function|const|let|class|interface|type|enum)\s+(\w+)/g,
  )) {
    found.push({ name: name as string, file, local: name as string });
  }
  return found;
}

/** Whether the declaration of `local` in `file` carries a `/** … *\/` comment right above it. */
function isDocumented(file: string, local: string): boolean {
  const code = readFileSync(path.join(root, file), "utf8");
  const declaration = new RegExp(
    `^export\\s+(?:(?:declare\\s+)?(?:async\\s+)?(?:function|const|let|class|interface|type|enum)\\s+${local}\\b|\\*\\s+as\\s+${local}\\s+from)`,
    "m",
  );
  const match = declaration.exec(code);
  if (match === null) return false;
  return /\/\*\*(?:(?!\*\/)[\s\S])*\*\/\s*$/.test(code.slice(0, match.index));
}

describe("package: entry points", () => {
  it("every exports path has its entry file, and the entry files are exactly the layer table's entry layer", () => {
    for (const entry of entries) expect(existsSync(path.join(root, entry.source)), entry.source).to.equal(true);
    const entryLayer = layers.find((layer) => layer.name === "entry");
    expect(entries.map((e) => e.source).sort()).to.deep.equal([...(entryLayer?.paths ?? [])].sort());
  });

  it("every name, value or type, is exported from one entry, apart from the names shared on purpose", () => {
    const homes = new Map<string, string[]>();
    for (const entry of entries) {
      for (const { name } of exportsOf(entry.source)) homes.set(name, [...new Set([...(homes.get(name) ?? []), entry.subpath])]);
    }
    const repeated = [...homes].filter(([name, where]) => where.length > 1 && String(shared[name]) !== String(where));
    expect(repeated).to.deep.equal([]);
  });

  it("context-host/plugin exports exactly the plugin API module that plugin bundles get", () => {
    const api = new Map<string, unknown>(Object.entries(pluginApi));
    expect(Object.keys(pluginEntry).sort()).to.deep.equal([...api.keys()].sort());
    const different = Object.entries(pluginEntry).filter(([name, value]) => value !== api.get(name));
    expect(different.map(([name]) => name)).to.deep.equal([]);
  });

  it("context-host exports definePlugin and the SystemContext loader values of the plugin API, and no internal", () => {
    expect(hostEntry.definePlugin).to.equal(pluginApi.definePlugin);
    expect(hostEntry.SystemContext).to.equal(pluginApi.SystemContext);
    expect(Object.keys(hostEntry.SystemContext).sort()).to.deep.equal(["absent", "unavailable"]);
    for (const internal of ["PluginSet", "Registry", "SessionRuntime", "startContextSources", "Scope"]) {
      expect(hostEntry, internal).not.to.have.property(internal);
    }
  });

  it("every exported declaration has TSDoc, and every entry file a module comment", () => {
    const undocumented = entries.flatMap((entry) =>
      exportsOf(entry.source)
        .filter((e) => !isDocumented(e.file, e.local))
        .map((e) => `${entry.subpath} ${e.name} (${e.file})`),
    );
    expect([...new Set(undocumented)]).to.deep.equal([]);
    for (const entry of entries) {
      expect(readFileSync(path.join(root, entry.source), "utf8"), entry.source).to.match(/^\/\*\*[\s\S]*?@module[\s\S]*?\*\//);
    }
  });
});
