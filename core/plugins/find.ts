// Owns finding the plugins a host would load from its `plugins` entries (a folder of plugins,
// a plugin file, an installed plugin package: decision 131), each with where it came from.
// `context-host plugins` lists what this finds, and the plugin set loads it.

import { existsSync, statSync } from "node:fs";
import path from "node:path";
import type { PluginOrigin } from "./events.ts";
import {
  discoverPlugins,
  type InstallPlace,
  isPackageName,
  lookUpPackage,
  type PluginEntryFile,
  type PluginPackage,
} from "./packages.ts";

/** One `plugins` entry, read: a path (folder or file), or a package name. */
export type PluginEntrySpec =
  | { readonly kind: "path"; readonly path: string }
  | { readonly kind: "package"; readonly name: string };

/** A plugin the host would load, and where it came from. */
export interface FoundPlugin extends PluginEntryFile {
  readonly origin: PluginOrigin;
}

/** Why a package's plugins (or some of them) are not loaded. */
export interface PackageProblem {
  readonly package: string;
  /** The package's package.json, or where it was looked for. */
  readonly file: string;
  readonly message: string;
}

/** What the `plugins` entries hold. */
export interface FoundPlugins {
  /** Entry by entry, each entry's plugins in name order; a file found twice counts once. */
  readonly plugins: readonly FoundPlugin[];
  /** The packages found (installed and readable), compatible or not. */
  readonly packages: readonly PluginPackage[];
  readonly problems: readonly PackageProblem[];
  /** Where an install or update of each named package would show. */
  readonly installPlaces: ReadonlyArray<InstallPlace & { readonly package: string }>;
}

/** Reads one `plugins` entry: an existing path or one written as a path is a path (a folder wins over a package of its name), else a package name. */
export function readPluginEntry(entry: string, projectRoot: string): PluginEntrySpec {
  const resolved = path.resolve(projectRoot, entry);
  const isWrittenAsPath = path.isAbsolute(entry) || entry.startsWith(".") || entry.includes("\\");
  if (isWrittenAsPath || existsSync(resolved) || !isPackageName(entry)) return { kind: "path", path: resolved };
  return { kind: "package", name: entry };
}

/** Finds the plugins of every entry. */
export function findPlugins(entries: readonly string[], projectRoot: string, hostVersion: string | undefined): FoundPlugins {
  const plugins: FoundPlugin[] = [];
  const packages: PluginPackage[] = [];
  const problems: PackageProblem[] = [];
  const installPlaces: Array<InstallPlace & { readonly package: string }> = [];
  const seen = new Set<string>();
  const add = (found: readonly PluginEntryFile[], origin: PluginOrigin) => {
    for (const plugin of found) {
      if (seen.has(plugin.file)) continue;
      seen.add(plugin.file);
      plugins.push({ ...plugin, origin });
    }
  };
  for (const entry of entries) {
    const spec = readPluginEntry(entry, projectRoot);
    if (spec.kind === "path") {
      if (existsSync(spec.path) && statSync(spec.path).isFile()) {
        const id = path.basename(spec.path).replace(/\.(ts|js)$/, "");
        add([{ id, file: spec.path }], { kind: "folder", folder: path.dirname(spec.path) });
      } else add(discoverPlugins(spec.path), { kind: "folder", folder: spec.path });
      continue;
    }
    const lookup = lookUpPackage(spec.name, projectRoot, hostVersion);
    for (const place of lookup.installPlaces) installPlaces.push({ ...place, package: spec.name });
    if (lookup.kind === "missing") {
      problems.push({ package: spec.name, file: lookup.file, message: lookup.problem });
      continue;
    }
    const found = lookup.package;
    packages.push(found);
    for (const message of lookup.problems) problems.push({ package: found.name, file: found.manifest, message });
    add(lookup.plugins, { kind: "package", name: found.name, version: found.version, root: found.root });
  }
  return { plugins, packages, problems, installPlaces };
}

/** An origin as `plugins` lists it: the folder (relative to `cwd` when inside it), or `name@version`. */
export function formatOrigin(origin: PluginOrigin, cwd: string): string {
  if (origin.kind === "package") return `${origin.name}@${origin.version}`;
  const relative = path.relative(cwd, origin.folder);
  return relative === "" ? "." : relative.startsWith("..") || path.isAbsolute(relative) ? origin.folder : relative;
}
