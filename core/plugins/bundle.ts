// Owns esbuild's bundles. A plugin's is the first seam of plugin loading, transform: its entry
// with its local imports as one CommonJS text with an inline source map; packages stay external
// (they resolve to the host's single copy at evaluation). A worker's program is its entry with
// all it imports. Both are cached on disk with what decides them (decisions 092, 191), so a
// restart with unchanged plugins starts no esbuild.

import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";
import { ContextHostError } from "../base/errors.ts";
import type { Location } from "./locations.ts";
import { type Built, cachedBuild, cachedProgram, fingerprint, hashOf } from "./program-cache.ts";

/** A bundled plugin generation, not yet evaluated. */
export interface PluginBundle {
  readonly entry: string;
  readonly code: string;
  /** Hash of the bundle text: identical content is not reloaded. */
  readonly hash: string;
  /** Absolute paths of every local file the bundle was built from: the plugin's watched files. */
  readonly inputs: readonly string[];
  /** The folder source-map paths are relative to. */
  readonly baseDir: string;
  /**
   * The plugin came from a package: the packages it imports resolve from the package first,
   * so it gets the dependencies it declares (decision 131); `context-host` and TypeBox stay the host's.
   */
  readonly ownDependenciesFirst?: boolean;
}

/** esbuild could not bundle the plugin; `location` points at the first error. */
export class BundleFailed extends ContextHostError {
  constructor(
    readonly entry: string,
    reason: string,
    /** Files esbuild read before failing, so a fix to any of them triggers a reload. */
    readonly inputs: readonly string[],
    readonly location?: Location,
  ) {
    super(reason);
  }
}

/** How many plugin bundles the cache keeps: each entry file has its own. */
const keptBundles = 256;
/** This file: its build options shape every bundle. */
const ownFile = fileURLToPath(import.meta.url);
const isRelative = (specifier: string) => /^\.\.?(\/|$)/.test(specifier) || path.isAbsolute(specifier);
/** What every bundle is: one CommonJS text for Node 20, kept in memory, with the files it was built from. */
const bundling = {
  bundle: true,
  write: false,
  metafile: true,
  format: "cjs",
  platform: "node",
  target: "node20",
  logLevel: "silent",
} as const satisfies esbuild.BuildOptions;
/**
 * The files a build read, absolute (`dir`: the folder it ran in); an esbuild plugin's namespaced
 * inputs (`x:`) are no files.
 */
const filesRead = (metafile: esbuild.Metafile, dir: string) =>
  Object.keys(metafile.inputs)
    .filter((input) => !input.includes(":"))
    .map((input) => path.resolve(dir, input));
/**
 * Whether a tsconfig.json extends another (a chain not fingerprinted); one that cannot be read has
 * a fingerprint that says so.
 */
function isExtending(config: string): boolean {
  try {
    return readFileSync(config, "utf8").includes('"extends"');
  } catch {
    return false;
  }
}

/**
 * Bundles one plugin entry, or takes its cached bundle. Throws `BundleFailed` with the location of
 * the first error.
 */
export async function bundlePlugin(
  entry: string,
  options: { readonly ownDependenciesFirst?: boolean } = {},
): Promise<PluginBundle> {
  const key = JSON.stringify({ entry, esbuild: esbuild.version, node: process.version });
  const { code, inputs } = await cachedBuild("plugin-bundle", keptBundles, key, () => build(entry));
  return { entry, code, hash: hashOf(code), inputs, baseDir: path.dirname(entry), ...options };
}

/**
 * esbuild's bundle of `entry`, with fingerprints of all that decided it, each taken before esbuild
 * read it (decision 191).
 */
async function build(entry: string): Promise<Built<{ code: string; inputs: string[] }>> {
  const baseDir = path.dirname(entry);
  const taken = new Map<string, string>([[ownFile, fingerprint(ownFile)]]);
  const entryFolder = fingerprint(baseDir);
  let isConfigExtended = false;
  const take = (file: string) => taken.has(file) || taken.set(file, fingerprint(file));
  const takeConfigs = (folder: string) => {
    for (let dir = folder; !taken.has(path.join(dir, "package.json")); dir = path.dirname(dir)) {
      for (const name of ["package.json", "tsconfig.json", "jsconfig.json"]) take(path.join(dir, name));
      if (!isConfigExtended) isConfigExtended = isAnyConfigExtending(dir);
      if (path.dirname(dir) === dir) return;
    }
  };
  takeConfigs(baseDir);
  const fingerprints: esbuild.Plugin = {
    name: "fingerprints",
    setup(build) {
      // Relative and absolute paths only: a package import (external) costs no round trip to this thread.
      build.onResolve({ filter: /^(\.\.?([\\/]|$)|[\\/]|[a-zA-Z]:[\\/])/ }, (args) => {
        if (args.kind !== "entry-point" && isRelative(args.path) && args.resolveDir !== "") {
          const target = path.resolve(args.resolveDir, args.path);
          take(path.dirname(target));
          take(target);
          takeConfigs(taken.get(target)?.startsWith("folder ") ? target : path.dirname(target));
        }
      });
      build.onLoad({ filter: /.*/, namespace: "file" }, (args) => void take(args.path));
    },
  };
  let result: esbuild.BuildResult<{ write: false; metafile: true }>;
  try {
    result = await esbuild.build({
      plugins: [fingerprints],
      entryPoints: [entry],
      absWorkingDir: baseDir,
      outfile: path.join(baseDir, "plugin.bundle.cjs"),
      ...bundling,
      packages: "external",
      sourcemap: "inline",
      // The map locates errors; code frames read the author's file when one is needed.
      // Leaving the sources out makes a 1 MB plugin bundle in ~20 ms instead of ~30 ms.
      sourcesContent: false,
    });
  } catch (error) {
    const failure = error as esbuild.BuildFailure;
    const first = failure.errors?.[0];
    if (first === undefined) throw error;
    const location = first.location === null ? undefined : locationIn(baseDir, first.location);
    const read = failure.errors.flatMap((e) => (e.location ? [e.location.file] : []));
    const inputs = read.map((file) => path.resolve(baseDir, file));
    throw new BundleFailed(entry, first.text, [...new Set([entry, ...inputs])], location);
  }
  const output = result.outputFiles[0];
  if (output === undefined) throw new BundleFailed(entry, "esbuild produced no output", [entry]);
  const inputs = filesRead(result.metafile, baseDir);
  // Stored only if every local file came by a relative import (not tsconfig `paths`, package
  // `imports` or a glob: their other candidates are not fingerprinted) and nothing changed meanwhile.
  const imports = Object.values(result.metafile.inputs).flatMap((input) => input.imports);
  const isEveryImportRelative = imports.every(isResolvedRelatively);
  const isCacheable = () =>
    isEveryImportRelative &&
    !isConfigExtended &&
    fingerprint(baseDir) === entryFolder &&
    [...taken].every(([file, print]) => fingerprint(file) === print);
  return {
    text: { code: output.text, inputs },
    inputs: [...taken.keys()],
    fingerprints: taken,
    isCacheable,
  };
}

/** Whether the tsconfig.json or the jsconfig.json in `dir` extends another. */
function isAnyConfigExtending(dir: string): boolean {
  return ["tsconfig.json", "jsconfig.json"].some((name) => isExtending(path.join(dir, name)));
}

/** Where an esbuild message points, its file absolute. */
function locationIn(baseDir: string, at: esbuild.Location): Location {
  return {
    file: path.resolve(baseDir, at.file),
    line: at.line,
    column: at.column,
    lineText: at.lineText,
  };
}

/** Whether esbuild resolved an import by its relative path with no glob (or left it to Node: external). */
function isResolvedRelatively(imported: esbuild.Metafile["inputs"][string]["imports"][number]): boolean {
  const isGlob = imported.path.includes("*");
  return !isGlob && (imported.external === true || isRelative(imported.original ?? imported.path));
}

const withoutGlob: esbuild.Plugin = {
  name: "without-fast-glob",
  setup(build) {
    build.onResolve({ filter: /^fast-glob$/ }, () => ({ path: "fast-glob", namespace: "without-glob" }));
    build.onLoad({ filter: /.*/, namespace: "without-glob" }, () => ({
      contents: "module.exports = () => { throw new Error('loadModules is not available in a plugin worker'); };",
      loader: "js",
    }));
  },
};

/**
 * A worker entry as one script, bundled with what it imports but `external` packages (its
 * `require` resolves them from the entry's folder). Cached on disk (decision 092): its inputs
 * are the files esbuild read and this file, whose options and wrapper shape the program.
 */
export async function bundleWorkerProgram(entry: string, external: readonly string[] = []): Promise<string> {
  const key = JSON.stringify({ entry, external, esbuild: esbuild.version, node: process.version });
  return cachedProgram(key, async () => {
    const result = await esbuild.build({
      entryPoints: [entry],
      ...bundling,
      external: [...external],
      // The worker's own `require` (for a plugin's packages) resolves from the entry's folder.
      define: { "import.meta.url": "__workerEntryUrl" },
      // awilix needs fast-glob only for `loadModules`, which the worker never calls; leaving
      // it out takes a third off the program and ~35 ms off every worker's start (decision 060).
      plugins: [withoutGlob],
      // Without comments and whitespace the program is a quarter smaller, and one-byte: a
      // comment's single non-Latin-1 character made V8 keep the whole text, in every worker,
      // as a two-byte string (1 MiB instead of 0.4). Names stay (error names come from them).
      minifyWhitespace: true,
      minifySyntax: true,
      legalComments: "none",
    });
    const body = result.outputFiles[0]?.text;
    if (body === undefined) throw new Error("esbuild produced no worker program");
    const text = `"use strict";
const __workerEntryUrl = ${JSON.stringify(new URL(`file://${entry}`).href)};
(function (require, module, exports) {
${body}
})(globalThis.__contextHostRealm?.require ?? process.getBuiltinModule("node:module").createRequire(${JSON.stringify(entry)}), { exports: {} }, {});
`;
    return { text, inputs: [...filesRead(result.metafile, process.cwd()), ownFile] };
  });
}
