// The layer rules, in one place. Each layer is a folder; it may import only the
// layers listed for it (always earlier ones), and files form no import cycle at all.
// `docs/architecture.md` draws the same table.

import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";

export interface Layer {
  readonly name: string;
  /** Folders (or single files) relative to the project root. */
  readonly paths: readonly string[];
  /** Layers this one may import. */
  readonly imports: readonly string[];
  /** Bare module specifiers (packages, `node:` built-ins) it may import; `*` for any. */
  readonly packages: readonly string[] | "*";
}

export const layers: readonly Layer[] = [
  { name: "base", paths: ["core/base"], imports: [], packages: ["node:fs", "node:path"] },
  {
    name: "system-context",
    paths: ["core/system-context"],
    imports: [],
    packages: ["typebox", "typebox/compile", "typebox/value"],
  },
  { name: "registry", paths: ["core/registry"], imports: ["base", "system-context"], packages: [] },
  { name: "plugins", paths: ["core/plugins"], imports: ["base", "system-context", "registry"], packages: "*" },
  { name: "sources", paths: ["core/sources"], imports: ["base", "system-context", "registry"], packages: "*" },
  { name: "session", paths: ["core/session"], imports: ["base", "system-context", "registry", "sources"], packages: "*" },
  { name: "providers", paths: ["core/providers"], imports: ["base", "system-context", "session"], packages: "*" },
  {
    name: "host",
    paths: ["core/host"],
    imports: ["base", "system-context", "registry", "plugins", "sources", "session", "providers"],
    packages: "*",
  },
  {
    name: "conformance",
    paths: ["core/conformance"],
    imports: ["base", "system-context", "registry", "plugins", "sources", "session", "providers", "host"],
    packages: "*",
  },
  {
    name: "entry",
    // One file per package entry point (package.json `exports`).
    paths: [
      "core/index.ts",
      "core/plugin.ts",
      "core/system-context.ts",
      "core/providers.ts",
      "core/store.ts",
      "core/conformance.ts",
    ],
    imports: ["base", "system-context", "registry", "plugins", "sources", "session", "providers", "host", "conformance"],
    packages: [],
  },
  {
    name: "cli",
    paths: ["scripts/cli"],
    imports: ["base", "system-context", "registry", "plugins", "sources", "session", "providers", "host", "conformance"],
    packages: "*",
  },
];

const importPattern =
  /(?:^|[\s;])(?:import|export)\s+(?:type\s+)?(?:[\w*{}\s,]+?\s+from\s+)?["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)/g;

/** The module specifiers a source file imports (comments and string contents outside imports ignored). */
export function importsOf(code: string): string[] {
  const withoutComments = code.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");
  return [...withoutComments.matchAll(importPattern)].map((m) => (m[1] ?? m[2]) as string);
}

/** Every `.ts`/`.js` file under `dir` (or `dir` itself if it is a file), relative to `root`. */
export function filesOf(root: string, dir: string): string[] {
  const full = path.join(root, dir);
  if (statSync(full).isFile()) return [dir];
  return readdirSync(full, { recursive: true, encoding: "utf8" })
    .filter((name) => /\.(ts|js|mts)$/.test(name))
    .map((name) => path.join(dir, name));
}

export interface Graph {
  /** file → the project files it imports */
  readonly edges: ReadonlyMap<string, readonly string[]>;
  /** file → bare specifiers it imports */
  readonly packages: ReadonlyMap<string, readonly string[]>;
}

export function graphOf(
  root: string,
  files: readonly string[],
  read = (file: string) => readFileSync(path.join(root, file), "utf8"),
): Graph {
  const edges = new Map<string, string[]>();
  const packages = new Map<string, string[]>();
  for (const file of files) {
    const specs = importsOf(read(file));
    edges.set(
      file,
      specs.filter((s) => s.startsWith(".")).map((s) => path.normalize(path.join(path.dirname(file), s))),
    );
    packages.set(
      file,
      specs.filter((s) => !s.startsWith(".")),
    );
  }
  return { edges, packages };
}

export function layerOf(file: string, table: readonly Layer[] = layers): Layer | undefined {
  return table.find((layer) => layer.paths.some((p) => file === p || file.startsWith(`${p}/`)));
}

/** Every import that breaks a layer rule, as `file → target: why`. */
export function violations(graph: Graph, table: readonly Layer[] = layers): string[] {
  const found: string[] = [];
  for (const [file, targets] of graph.edges) {
    const from = layerOf(file, table);
    if (from === undefined) continue;
    for (const target of targets) {
      const to = layerOf(target, table);
      if (to === undefined) found.push(`${file} → ${target}: not in any layer`);
      else if (to !== from && !from.imports.includes(to.name))
        found.push(`${file} → ${target}: layer ${from.name} may not import ${to.name}`);
    }
    const allowed = from.packages;
    for (const spec of graph.packages.get(file) ?? []) {
      if (allowed !== "*" && !allowed.includes(spec)) found.push(`${file} → ${spec}: layer ${from.name} may not import ${spec}`);
    }
  }
  return found;
}

/** Import cycles among files, each as the list of files around it. */
export function cycles(graph: Graph): string[][] {
  const found: string[][] = [];
  const state = new Map<string, "open" | "done">();
  const stack: string[] = [];
  const visit = (file: string) => {
    state.set(file, "open");
    stack.push(file);
    for (const target of graph.edges.get(file) ?? []) {
      if (state.get(target) === "open") found.push([...stack.slice(stack.indexOf(target)), target]);
      else if (state.get(target) === undefined && graph.edges.has(target)) visit(target);
    }
    stack.pop();
    state.set(file, "done");
  };
  for (const file of [...graph.edges.keys()].sort()) if (state.get(file) === undefined) visit(file);
  return found;
}
