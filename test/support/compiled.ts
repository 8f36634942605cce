// A compiled copy of the project's sources for the tests' child processes (the hostile
// plugins' host, the command line, crash-trial workers, a step in another process, a
// bench's smoke run). Under tsx a child spends ~3 s before its first line runs (Node 20 runs tsx's
// module hooks off-thread, once per module, for every TypeBox file); the same modules as
// plain JavaScript start in a fraction of that. So core/, scripts/ and the test folders
// children run from are compiled once (esbuild, one output file per source file, the same
// layout) into a temp folder whose `node_modules` links to the project's, and children
// run there on plain Node. Under `npm test` the test processes share one such folder.
//
// Relative `.ts` specifiers become `.js`, and so does any string literal naming a sibling
// source file (a worker's entry file named by path, for instance), so code that finds a
// file next to itself finds its compiled twin. TypeBox, hundreds of small modules that
// take a child ~0.6 s to load, is bundled once into `vendor/` (its three entry points
// sharing chunks, so there is still one TypeBox) and imported from there.

import { execFileSync } from "node:child_process";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { buildSync } from "esbuild";

const root = path.resolve(import.meta.dirname, "../..");
const folders = ["core", "scripts", "test/plugins/hostile", "test/session", "test/instructions"];

/** TypeBox's entry points and their bundled files under `vendor/`. */
const vendored: Readonly<Record<string, string>> = {
  typebox: "vendor/typebox.js",
  "typebox/compile": "vendor/typebox-compile.js",
  "typebox/value": "vendor/typebox-value.js",
};

/** Points imports of TypeBox in the compiled `output` at the bundled copy under `dir`. */
function vendor(code: string, output: string, dir: string): string {
  return code.replace(
    /(\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)(["'])(typebox(?:\/compile|\/value)?)\2/g,
    (whole, lead: string, quote: string, name: string) => {
      const target = vendored[name];
      if (target === undefined) return whole;
      const relative = path.relative(path.dirname(output), path.join(dir, target));
      return `${lead}${quote}${relative.startsWith(".") ? relative : `./${relative}`}${quote}`;
    },
  );
}

/** Rewrites string literals that name a project `.ts` file relative to `source` so they name its `.js` twin. */
function retarget(code: string, source: string): string {
  return code.replace(/(["'`])((?:\.{1,2}\/)?[A-Za-z0-9_@./-]*?)\.ts\1/g, (whole, quote: string, stem: string) => {
    const target = path.resolve(path.dirname(source), `${stem}.ts`);
    return existsSync(target) ? `${quote}${stem}.js${quote}` : whole;
  });
}

/** Whether children run their sources under tsx instead (CONTEXT_HOST_TEST_TSX=1). */
export const isUnderTsx = process.env.CONTEXT_HOST_TEST_TSX === "1";

let built: { readonly dir: string } | undefined;

/**
 * The Node arguments that run project file `relative` (a `.ts` path) in a child: its
 * compiled twin, or with CONTEXT_HOST_TEST_TSX=1 the source itself under tsx (slower;
 * for when the compiled copy is in doubt).
 */
export function programArgs(relative: string): string[] {
  if (isUnderTsx)
    return ["--import", pathToFileURL(path.join(root, "node_modules/tsx/dist/loader.mjs")).href, path.join(root, relative)];
  return [compiledProject().file(relative)];
}

/**
 * Where `npm test` (scripts/test.mjs) has its test processes share one compiled copy: the
 * first process that needs it builds it there while the others wait, and test.mjs removes
 * it at the end. Without it (a file run on its own) each process builds its own.
 */
const sharedDir = process.env.CONTEXT_HOST_TEST_COMPILED;

/** Blocks this thread for `ms` (the copy is wanted by synchronous callers). */
function pause(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** The compiled copy: built on first use, and removed when the process exits unless shared. */
export function compiledProject(): { readonly dir: string; file(relative: string): string } {
  if (built === undefined && sharedDir !== undefined) {
    const done = path.join(sharedDir, ".built");
    const lock = `${sharedDir}.lock`;
    for (const startedAt = Date.now(); !existsSync(done); pause(50)) {
      try {
        mkdirSync(lock);
      } catch {
        if (Date.now() - startedAt > 60_000) throw new Error(`waited a minute for another test process to build ${sharedDir}`);
        continue;
      }
      try {
        if (!existsSync(done)) {
          rmSync(sharedDir, { recursive: true, force: true });
          mkdirSync(sharedDir, { mode: 0o755 });
          build(sharedDir);
          writeFileSync(done, "");
        }
      } finally {
        rmSync(lock, { recursive: true, force: true });
      }
    }
    built = { dir: sharedDir };
  }
  if (built === undefined) {
    const dir = mkdtempSync(path.join(os.tmpdir(), "context-host-compiled-"));
    process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
    build(dir);
    built = { dir };
  }
  const dir = built.dir;
  return { dir, file: (relative) => path.join(dir, relative.replace(/\.ts$/, ".js")) };
}

/** Compiles the sources into `dir` (see the file comment). */
function build(dir: string): void {
  // Readable by every user: a child may run as another (test/instructions/safety.test.ts).
  chmodSync(dir, 0o755);
  // Named and versioned as the package, so the copy knows the host's version (plugin packages' peer ranges).
  const { version } = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")) as { version: string };
  writeFileSync(path.join(dir, "package.json"), JSON.stringify({ name: "context-host", version, type: "module", private: true }));
  symlinkSync(path.join(root, "node_modules"), path.join(dir, "node_modules"));
  buildSync({
    entryPoints: { typebox: "typebox", "typebox-compile": "typebox/compile", "typebox-value": "typebox/value" },
    absWorkingDir: root,
    bundle: true,
    splitting: true,
    format: "esm",
    platform: "node",
    target: "node20",
    outdir: path.join(dir, "vendor"),
    logLevel: "error",
  });
  const sources = folders.flatMap((folder) =>
    readdirSync(path.join(root, folder), { recursive: true, encoding: "utf8" })
      .filter((name) => name.endsWith(".ts") && !name.endsWith(".d.ts"))
      .map((name) => path.join(root, folder, name)),
  );
  // One esbuild call for every file (not one per file): a second less per test process.
  const { outputFiles } = buildSync({
    entryPoints: sources,
    absWorkingDir: root,
    outbase: root,
    outdir: dir,
    write: false,
    format: "esm",
    platform: "node",
    target: "node20",
    logLevel: "error",
  });
  for (const { path: output, text } of outputFiles) {
    const source = path.join(root, path.relative(dir, output)).replace(/\.js$/, ".ts");
    mkdirSync(path.dirname(output), { recursive: true });
    writeFileSync(output, vendor(retarget(text, source), output, dir));
  }
  warmWorkerProgram(dir);
}

/**
 * Builds this copy's plugin-worker program into the user's program cache (decision 092),
 * once, before any child runs: the copy is new at every run, so otherwise every child
 * that starts a plugin worker would bundle the program itself, several at once on a
 * loaded machine (a control host's createHost then outran its bound on a first run).
 */
function warmWorkerProgram(dir: string): void {
  if (process.env.CONTEXT_HOST_CACHE === "off") return;
  const url = pathToFileURL(path.join(dir, "core/plugins/plugin-worker.js")).href;
  execFileSync(process.execPath, ["--input-type=module", "-e", `await (await import(${JSON.stringify(url)})).workerProgram();`], {
    stdio: ["ignore", "ignore", "inherit"],
  });
}
