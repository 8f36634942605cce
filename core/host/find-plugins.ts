// Owns the public `findPlugins`: which plugins a host with given `plugins` entries would
// load, and where each came from, without loading any (what `context-host plugins` lists).
// The host's own version is filled in here, so peer ranges are checked as the host checks them.

import { type FoundPlugin, findPlugins as findEntries, type PackageProblem } from "../plugins/find.ts";
import { hostPackageVersion, installedManifest } from "../plugins/packages.ts";

/** Why a package's plugins (or some of them) would not load. */
export interface PluginPackageProblem extends PackageProblem {
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

/**
 * The plugins a host with these `plugins` entries would load (`HostOptions.plugins`: plugin
 * folders, plugin files and installed plugin package names), each with where it came from:
 * its folder, or its package and version. Nothing is loaded or run. Paths resolve against
 * `projectRoot` (default: the working folder), and package names from there as Node resolves
 * them; a package that is missing, or whose peer range of context-host does not admit this
 * version, is a problem, not an error.
 *
 * @example
 * ```ts
 * import { findPlugins, formatOrigin } from "context-host";
 *
 * const { plugins, problems } = findPlugins(["plugins"], { projectRoot: process.cwd() });
 * for (const plugin of plugins) console.log(plugin.id, formatOrigin(plugin.origin, process.cwd()));
 * console.log(problems.length); // 0: a folder has no package to refuse
 * ```
 */
export function findPlugins(entries: readonly string[], options: { readonly projectRoot?: string } = {}): PluginsFound {
  const projectRoot = options.projectRoot ?? process.cwd();
  const found = findEntries(entries, projectRoot, hostPackageVersion());
  return {
    plugins: found.plugins,
    problems: found.problems.map((problem) => ({
      ...problem,
      isInstalled: installedManifest(problem.package, projectRoot) !== undefined,
    })),
  };
}
