// Builds the package into dist/ (`npm run build`; `prepack` runs it, so `npm pack`,
// `npm publish` and git installs build; `npm ci` does not, and no test needs dist/). Plain JavaScript so that it needs nothing but
// Node and the project's TypeScript.
//
// 1. tsconfig.build.json: core/ and the command line as ESM JavaScript with source maps,
//    comments left out (they would double the JavaScript).
// 2. tsconfig.types.json: declarations of core/, with their TSDoc; exports marked
//    `@internal` left out (decision 097).
// 3. Leaves out what no entry point reaches: declarations no entry's declarations import
//    (internal modules' types), and JavaScript no entry or `bin` imports (modules that
//    hold only types compile to empty files). The package holds what its API reaches.
// 4. Minifies the JavaScript with esbuild, keeping every name (decisions 051, 052).
// 5. Indents the declarations with tabs.
//
// Both compiler runs skip type checking (`--noCheck`): `npm test` type-checks the whole
// project first (`npm run typecheck`), and checking core/ twice more would triple the cost.

import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import vm from "node:vm";

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
  const kept = file.endsWith(".d.ts")
    ? declarations.has(file)
    : file.endsWith(".js.map")
      ? javascript.has(file.slice(0, -".map".length))
      : file.endsWith(".js")
        ? javascript.has(file)
        : true;
  if (!kept) {
    rmSync(file);
    left++;
  }
}
// 4. Minify the JavaScript (decisions 051, 052): local identifiers shortened, whitespace out,
//    every function and class keeping its name (`keepNames`), so stack traces and the error
//    classes' `name` still read as written. esbuild is a dependency of the package anyway.
const esbuild = createRequire(import.meta.url)("esbuild");
for (const file of javascript) {
  const code = readFileSync(file, "utf8");
  writeFileSync(
    file,
    esbuild.transformSync(code, { minify: true, keepNames: true, format: "esm", target: "node20", loader: "js" }).code,
  );
}
// 4b. The inspector's browser script and stylesheet are text in string modules (decision
//     080), which step 4 leaves as written: minified here, each only if what comes out can go
//     back between its template's backticks unchanged, and the script only if it parses.
minifyEmbedded("dist/scripts/cli/inspector/page-script.js", /String\.raw`([\s\S]*)`/, "js");
minifyEmbedded("dist/scripts/cli/inspector/page.js", /`(:root \{[\s\S]*?)`/, "css");
// The page's HTML loses its indentation only (its one <pre> is empty; elsewhere HTML collapses white space).
const pageModule = path.join(root, "dist/scripts/cli/inspector/page.js");
writeFileSync(
  pageModule,
  readFileSync(pageModule, "utf8").replace(/`<!doctype html>[\s\S]*?`/, (html) => html.replace(/\n[ \t]+/g, "\n")),
);
// 4c. The stores' SQL, the only multi-line text of their modules, on one line each: SQL reads
//     white space as one space, and none of it has a `--` comment a joined line would extend.
for (const relative of ["dist/core/session/store/sqlite.js", "dist/core/session/store/postgres.js"]) {
  const file = path.join(root, relative);
  const code = readFileSync(file, "utf8");
  if (code.includes("--")) throw new Error(`build: ${relative} has "--": its SQL cannot be joined onto one line`);
  const joined = code.replace(/\n[ \t]*/g, " ");
  esbuild.transformSync(joined, { loader: "js", format: "esm" }); // throws if it no longer parses
  writeFileSync(file, joined);
}
// 5. Declarations indented with tabs instead of tsc's four spaces (decision 052): the same
//    text and TSDoc for editors, ~5 KB less of the package's 400 KiB budget.
for (const file of declarations) {
  const text = readFileSync(file, "utf8");
  writeFileSync(
    file,
    text.replace(/^(?: {4})+/gm, (indent) => "\t".repeat(indent.length / 4)),
  );
}
process.stdout.write(
  `dist/: ${javascript.size} modules, ${declarations.size} declaration files (${left} unreachable files left out)\n`,
);

/**
 * Replaces the text `pattern` captures in `file` (relative to the project) by its minified
 * form (`loader` "js" or "css"), when that text can sit in a template literal as it is (no
 * backtick, no `${`). Throws if the text is missing, so a rename cannot silently ship the
 * page unminified, and if a minified script does not parse.
 */
function minifyEmbedded(relative, pattern, loader) {
  const file = path.join(root, relative);
  const code = readFileSync(file, "utf8");
  const found = pattern.exec(code);
  if (found === null) throw new Error(`build: ${relative} has no embedded ${loader} to minify`);
  const minified = esbuild.transformSync(found[1], { loader, minify: true }).code.trim();
  if (/`|\$\{/.test(minified)) return;
  if (loader === "js") new vm.Script(minified, { filename: relative });
  const start = found.index + found[0].indexOf(found[1]);
  writeFileSync(file, code.slice(0, start) + minified + code.slice(start + found[1].length));
}

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
