// Builds the package into dist/ (`npm run build`; `prepack` runs it, so `npm pack`,
// `npm publish` and installs from git build). A clone needs no build: the program's
// bin/context-host.mjs runs the sources while dist/ is absent, and the examples resolve
// `context-host` to its sources (decision 202). Plain JavaScript so that it needs nothing
// but Node and the project's TypeScript.
//
// 1. tsconfig.build.json: core/ and the command line as readable ESM JavaScript, as tsc
//    writes it (names, lines and comments kept), with source maps (`.js.map`).
// 2. tsconfig.types.json: declarations of core/, with their TSDoc and maps (`.d.ts.map`);
//    exports marked `@internal` left out (decision 097).
// 3. Leaves out what no entry point reaches: declarations no entry's declarations import
//    (internal modules' types), and JavaScript no entry or `bin` imports (modules that
//    hold only types compile to empty files), each with its map. The package holds what
//    its API reaches; the maps point at the TypeScript sources, which ship beside dist/
//    (package.json `files`), so stack traces and "go to definition" land on readable code.
//
// Nothing is minified: users debug this JavaScript.
//
// Both compiler runs skip type checking (`--noCheck`): `npm test` type-checks the whole
// project first (`npm run typecheck`), and checking core/ twice more would triple the cost.

import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

const root = path.resolve(import.meta.dirname, "..");
const dist = path.join(root, "dist");
const typescript = createRequire(import.meta.url).resolve("typescript/package.json");
const tsc = path.join(path.dirname(typescript), JSON.parse(readFileSync(typescript, "utf8")).bin.tsc);

rmSync(dist, { recursive: true, force: true });
for (const config of ["tsconfig.build.json", "tsconfig.types.json"]) {
  const result = spawnSync(process.execPath, [tsc, "-p", config, "--noCheck"], { cwd: root, stdio: "inherit" });
  if (result.status !== 0) process.exit(result.status ?? 1);
}

const manifest = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8"));
const entries = Object.values(manifest.exports).filter((target) => typeof target === "object");

// Worker programs are built from these entries at run time (decisions 060, 083): no import
// names them, so they are listed here.
const workerEntries = ["dist/core/plugins/worker/entry.js", "dist/core/conformance/check-worker.js"];
const javascript = reachable(
  [...entries.map((e) => e.default), ...Object.values(manifest.bin), ...workerEntries],
  (file) => file,
);
const declarations = reachable(
  entries.map((e) => e.types),
  (file) => file.replace(/\.(ts|js)$/, ".d.ts"),
);

let left = 0;
for (const file of readdirSync(dist, { recursive: true, encoding: "utf8" }).map((f) => path.join(dist, f))) {
  const built = file.endsWith(".map") ? file.slice(0, -".map".length) : file;
  const kept = built.endsWith(".d.ts") ? declarations.has(built) : built.endsWith(".js") ? javascript.has(built) : true;
  if (!kept) {
    rmSync(file);
    left++;
  }
}
process.stdout.write(
  `dist/: ${javascript.size} modules, ${declarations.size} declaration files (${left} unreachable files left out)\n`,
);

/**
 * Files reachable from `starts` (paths relative to the project) through relative
 * imports and re-exports; `target` maps an import specifier's file to the file to follow.
 */
function reachable(starts, target) {
  const seen = new Set();
  const pending = starts.map((file) => path.join(root, file));
  while (pending.length > 0) {
    const file = pending.pop();
    if (seen.has(file)) continue;
    if (!existsSync(file))
      throw new Error(`build: ${path.relative(root, file)} is named by package.json or imported, but was not built`);
    seen.add(file);
    const code = readFileSync(file, "utf8");
    for (const match of code.matchAll(/(?:from|import)\s*\(?\s*"(\.{1,2}\/[^"]+)"/g)) {
      pending.push(target(path.resolve(path.dirname(file), match[1])));
    }
  }
  return seen;
}
