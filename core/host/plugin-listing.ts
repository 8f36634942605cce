// Owns what a dev tool learns about plugins without loading any: which plugins a host with
// given `plugins` entries would load and where each came from (what `context-host plugins`
// lists), how one entry is read, and an origin as text. The host's own version is filled in
// here, so peer ranges are checked as the host checks them. The types are declared here,
// narrower than the plugin layer's, so the public API shows only what a caller reads.

import path from "node:path";
import type { PluginOrigin } from "../plugins/events.ts";
import {
  findPlugins as findEntries,
  hostPackageVersion,
  installedManifest,
  readPluginEntry as readEntry,
} from "../plugins/find.ts";

/** A plugin a host would load: its id (file or folder name), its entry file, and where it came from. */
export interface FoundPlugin {
  readonly id: string;
  readonly file: string;
  readonly origin: PluginOrigin;
}

/** Why a package's plugins (or some of them) would not load. */
export interface PluginPackageProblem {
  readonly package: string;
  /** The package's package.json, or where it was looked for. */
  readonly file: string;
  readonly message: string;
  /** False when no package by that name is installed where Node looks from the project root. */
  readonly isInstalled: boolean;
}

/** What `findPlugins` found. */
export interface PluginsFound {
  /** Entry by entry, each entry's plugins in name order; a file named twice counts once. */
  readonly plugins: readonly FoundPlugin[];
  /** The packages whose plugins (some or all) would not load, and why. */
  readonly problems: readonly PluginPackageProblem[];
}

/** One `plugins` entry, read: a path (a folder or a file), or the name of a package. */
export type PluginEntrySpec =
  | { readonly kind: "path"; readonly path: string }
  | { readonly kind: "package"; readonly name: string };

/**
 * The plugins a host with these `plugins` entries would load (`HostOptions.plugins`: plugin
 * folders, plugin files and installed plugin package names), each with where it came from.
 * Nothing is loaded or run. Paths resolve against `projectRoot` (default: the working
 * folder), package names from there as Node resolves them; a package that is missing, or
 * whose peer range of context-host does not admit this version, is a problem, not an error.
 */
export function findPlugins(entries: readonly string[], options: { readonly projectRoot?: string } = {}): PluginsFound {
  const projectRoot = options.projectRoot ?? process.cwd();
  const found = findEntries(entries, projectRoot, hostPackageVersion());
  return {
    plugins: found.plugins.map(({ id, file, origin }) => ({ id, file, origin })),
    problems: found.problems.map((problem) => ({
      ...problem,
      isInstalled: installedManifest(problem.package, projectRoot) !== undefined,
    })),
  };
}

/**
 * How a host reads one `plugins` entry: an existing path, or one written as a path (absolute,
 * or starting with `.`), is a path resolved against `projectRoot`; any other name a package
 * may have is a package name.
 */
export function readPluginEntry(entry: string, projectRoot: string): PluginEntrySpec {
  return readEntry(entry, projectRoot);
}

/** A plugin's origin as `context-host plugins` prints it: its folder (relative to `cwd` when inside it), or `name@version`. */
export function formatOrigin(origin: PluginOrigin, cwd: string): string {
  if (origin.kind === "package") return `${origin.name}@${origin.version}`;
  const relative = path.relative(cwd, origin.folder);
  return relative === "" ? "." : relative.startsWith("..") || path.isAbsolute(relative) ? origin.folder : relative;
}
