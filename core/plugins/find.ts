// Owns finding the plugins of a host's `plugins` entries (decision 131): plugin folders and files,
// and plugin packages (decision 130) found as Node resolves them from the host project, declaring
// their plugin modules in package.json, loaded only when their peer range of context-host admits
// the host's version. Plain data: the plugin set decides what to load.

import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import semver from "semver";
import Type from "typebox";
import { Compile } from "typebox/compile";
import { messageOf } from "../base/errors.ts";
import type { PluginOrigin } from "./events.ts";
import { compareText } from "./namespaces.ts";
import { hashOf } from "./program-cache.ts";

/** One `plugins` entry, read: a path (folder or file), or a package name. */
export type PluginEntrySpec =
  | { readonly kind: "path"; readonly path: string }
  | { readonly kind: "package"; readonly name: string };

/** A plugin the host would load, and where it came from; `id` (file or folder name) orders loading. */
export interface FoundPlugin {
  readonly id: string;
  readonly file: string;
  readonly origin: PluginOrigin;
}

/** Why a package's plugins (or some of them) are not loaded. */
export interface PackageProblem {
  readonly package: string;
  /** The package's package.json, or where it was looked for. */
  readonly file: string;
  readonly message: string;
}

/**
 * Where an install, update or removal of package `package` shows: the entry `entry` of `folder`
 * (`tides` in node_modules, or `@moon` until node_modules/@moon exists; `package.json` in
 * the package's own folder). npm replaces a package's folder whole, with files as old as the
 * tarball's, so watching these folders is what sees an update (decision 131).
 */
export interface InstallPlace {
  readonly folder: string;
  readonly entry: string;
  readonly package: string;
}

/** What the `plugins` entries (or one package) hold. */
export interface FoundPlugins {
  /** Entry by entry, each entry's plugins in name order; a file found twice counts once. */
  readonly plugins: readonly FoundPlugin[];
  /**
   * The packages found (installed and readable, compatible or not) by name, each as the hash of its
   * package.json and its folder (symbolic links resolved): a change (an `npm update`) reloads its
   * plugins.
   */
  readonly packages: ReadonlyMap<string, string>;
  readonly problems: readonly PackageProblem[];
  /**
   * Where an install or update of each named package would show; none for a package when no folder
   * Node looks in exists.
   */
  readonly installPlaces: readonly InstallPlace[];
}

/** What can name an npm package (up to 214 characters). */
const packageName = /^(?:@[a-z0-9][a-z0-9._~-]*\/)?[a-z0-9~][a-z0-9._~-]*$/;

/**
 * Reads one `plugins` entry: an existing path or one written as a path is a path (a folder wins
 * over a package of its name), else a package name.
 */
export function readPluginEntry(entry: string, projectRoot: string): PluginEntrySpec {
  const resolved = path.resolve(projectRoot, entry);
  const isWrittenAsPath = path.isAbsolute(entry) || entry.startsWith(".") || entry.includes("\\");
  const isPackageName = entry.length <= 214 && packageName.test(entry);
  if (isWrittenAsPath || existsSync(resolved) || !isPackageName) return { kind: "path", path: resolved };
  return { kind: "package", name: entry };
}

/** Finds the plugins of every entry. */
export function findPlugins(entries: readonly string[], projectRoot: string, hostVersion: string | undefined): FoundPlugins {
  // By file: a file found twice keeps its first place.
  const plugins = new Map<string, FoundPlugin>();
  const packages = new Map<string, string>();
  const problems: PackageProblem[] = [];
  const installPlaces: InstallPlace[] = [];
  for (const entry of entries) {
    const spec = readPluginEntry(entry, projectRoot);
    let found: readonly FoundPlugin[];
    if (spec.kind === "package") {
      const lookup = lookUpPackage(spec.name, projectRoot, hostVersion);
      for (const [name, stamp] of lookup.packages) packages.set(name, stamp);
      problems.push(...lookup.problems);
      installPlaces.push(...lookup.installPlaces);
      found = lookup.plugins;
    } else if (existsSync(spec.path) && statSync(spec.path).isFile()) {
      const id = path.basename(spec.path).replace(/\.(ts|js)$/, "");
      found = [{ id, file: spec.path, origin: { kind: "folder", folder: path.dirname(spec.path) } }];
    } else {
      found = discoverPlugins(spec.path, { kind: "folder", folder: spec.path });
    }
    for (const plugin of found) {
      if (!plugins.has(plugin.file)) plugins.set(plugin.file, plugin);
    }
  }
  return { plugins: [...plugins.values()], packages, problems, installPlaces };
}

const pluginFile = /^[^._][^/]*\.(ts|js)$/;
const notPlugin = /\.(d|test|spec)\.(ts|js)$/;

/**
 * The plugins of one folder, sorted: `.ts`/`.js` files, and folders with an `index.ts` (or
 * `index.js`). A missing folder has none.
 */
function discoverPlugins(folder: string, origin: PluginOrigin): FoundPlugin[] {
  if (!existsSync(folder)) return [];
  const found: FoundPlugin[] = [];
  for (const dirent of readdirSync(folder, { withFileTypes: true })) {
    const name = dirent.name;
    if (name.startsWith(".") || name.startsWith("_") || name === "node_modules") continue;
    const full = path.join(folder, name);
    if (dirent.isFile() && pluginFile.test(name) && !notPlugin.test(name)) {
      found.push({ id: name.replace(/\.(ts|js)$/, ""), file: full, origin });
    } else if (dirent.isDirectory()) {
      const index = indexOf(full);
      if (index !== undefined) found.push({ id: name, file: index, origin });
    }
  }
  return found.sort((a, b) => compareText(a.id, b.id) || compareText(a.file, b.file));
}

/** A folder plugin's entry: its `index.ts`, else its `index.js`. */
function indexOf(folder: string): string | undefined {
  return ["index.ts", "index.js"].map((file) => path.join(folder, file)).find((file) => existsSync(file));
}

const pluginsField = "context-host";

/** What a plugin package declares under `pluginsField`: its plugin files and folders. */
const DeclaredPlugins = Type.Object(
  {
    plugins: Type.Array(Type.String({ minLength: 1 }), { minItems: 1 }),
  },
  { additionalProperties: false },
);

// The fields of a plugin package's package.json the host reads; the rest is npm's.
const PluginManifest = Type.Object({
  name: Type.String({ minLength: 1 }),
  version: Type.String({ minLength: 1 }),
  peerDependencies: Type.Optional(Type.Record(Type.String(), Type.String())),
  [pluginsField]: Type.Optional(DeclaredPlugins),
});
const manifestValidator = Compile(PluginManifest);

/**
 * Looks package `name` up from `projectRoot` as Node would, reads what it declares and checks
 * its peer range against `hostVersion`: its plugins and the problems that keep some or all out
 * (a package not installed or not readable is a problem, and no package).
 */
export function lookUpPackage(name: string, projectRoot: string, hostVersion: string | undefined): FoundPlugins {
  const installPlaces = installPlacesOf(name, projectRoot);
  const result = (file: string, problems: string[], plugins: FoundPlugin[] = [], stamp?: string) => {
    const packages = new Map(stamp === undefined ? [] : [[name, stamp]]);
    const packageProblems = problems.map((message) => ({ package: name, file, message }));
    return { plugins, packages, problems: packageProblems, installPlaces };
  };
  const file = installedManifest(name, projectRoot);
  if (file === undefined) {
    const notInstalled = `no installed package ${name} (npm i ${name})`;
    const message = `${JSON.stringify(name)}: no such file or folder in ${projectRoot}, and ${notInstalled}`;
    return result(path.join(projectRoot, "node_modules", name), [message]);
  }
  let text: string;
  let manifest: unknown;
  try {
    text = readFileSync(file, "utf8");
    manifest = JSON.parse(text);
  } catch (error) {
    return result(file, [`package ${name}: its package.json cannot be read: ${messageOf(error)}`]);
  }
  if (!manifestValidator.Check(manifest)) {
    const first = manifestValidator.Errors(manifest)[0];
    const field = (first?.instancePath ?? "").replace(/^\//, "").replaceAll("/", ".") || "(file)";
    return result(file, [`package ${name}: package.json ${field}: ${first?.message ?? "invalid"}`]);
  }
  const { version } = manifest;
  const root = path.dirname(file);
  const origin: PluginOrigin = { kind: "package", name, version, root };
  const stamp = `${hashOf(text)} ${root}`;
  const label = `${name}@${version}`;
  const incompatibility = checkPeerRange(manifest.peerDependencies?.["context-host"], hostVersion);
  if (incompatibility !== undefined) return result(file, [`${label}: ${incompatibility}`], [], stamp);
  const declared = manifest[pluginsField]?.plugins;
  if (declared === undefined) {
    const needed = `"${pluginsField}": { "plugins": ["plugins/x.ts"] }`;
    const message = `${label} declares no plugins: its package.json needs ${needed}`;
    return result(file, [message], [], stamp);
  }
  const plugins: FoundPlugin[] = [];
  const problems: string[] = [];
  for (const entry of declared) {
    const declaredAt = path.resolve(root, entry);
    const relative = path.relative(root, declaredAt);
    const names = `${label}: "${pluginsField}".plugins names ${JSON.stringify(entry)}`;
    const isOutside = relative.startsWith("..") || path.isAbsolute(relative);
    const here = isOutside ? null : pluginsAt(declaredAt, origin);
    if (here !== null && here !== undefined && here.length > 0) plugins.push(...here);
    else problems.push(`${names}, ${whyNoPlugins(here)}`);
  }
  return result(file, problems, plugins, stamp);
}

/**
 * Why a declared path gives no plugin: it is outside the package (null), missing (undefined), or a
 * folder with none.
 */
function whyNoPlugins(here: readonly FoundPlugin[] | null | undefined): string {
  if (here === null) return "which is outside the package";
  if (here === undefined) return 'which the installed package does not have (is it in "files"?)';
  return "a folder with no plugin in it";
}

/**
 * Why `hostVersion` does not satisfy a package's peer range of context-host (none: it does,
 * or there is none). A prerelease of the host counts as its version: 0.2.0-rc.1 satisfies `>=0.1`.
 */
export function checkPeerRange(range: string | undefined, hostVersion: string | undefined): string | undefined {
  if (range === undefined || hostVersion === undefined) return undefined;
  if (semver.validRange(range) === null) {
    return `its peer range of context-host ${JSON.stringify(range)} is not a semver range`;
  }
  if (semver.satisfies(hostVersion, range, { includePrerelease: true })) return undefined;
  const host = `this host is context-host ${hostVersion}`;
  return `needs context-host ${range} (peerDependencies), but ${host}; its plugins are not loaded`;
}

/**
 * The plugins at a declared path: a plugin file, a plugin folder, or a folder of plugins; undefined
 * when nothing is there.
 */
function pluginsAt(file: string, origin: PluginOrigin): FoundPlugin[] | undefined {
  let isFile: boolean;
  try {
    isFile = statSync(file).isFile();
  } catch {
    return undefined;
  }
  if (isFile) return [{ id: path.basename(file).replace(/\.(ts|js|mts|mjs|cts|cjs)$/, ""), file, origin }];
  const index = indexOf(file);
  if (index !== undefined) return [{ id: path.basename(file), file: index, origin }];
  return discoverPlugins(file, origin);
}

/**
 * Where package `name` is installed as Node looks for it (else where `npm i` would put it), and its
 * package.json when its folder exists.
 */
function installPlacesOf(name: string, projectRoot: string): InstallPlace[] {
  const folders = createRequire(path.join(projectRoot, "package.json")).resolve.paths(name) ?? [];
  const installed = folders.find((folder) => existsSync(path.join(folder, name)));
  const base = installed ?? folders.find((folder) => existsSync(folder));
  if (base === undefined) return [];
  const own = path.join(base, name);
  const manifest = existsSync(own) ? [{ folder: own, entry: "package.json", package: name }] : [];
  const [first, rest] = name.split("/") as [string, string | undefined];
  if (rest !== undefined && existsSync(path.join(base, first))) {
    return [{ folder: path.join(base, first), entry: rest, package: name }, ...manifest];
  }
  return [{ folder: base, entry: first, package: name }, ...manifest];
}

/**
 * The package.json of package `name` where Node finds it from `projectRoot`, or undefined when it
 * is not installed.
 */
export function installedManifest(name: string, projectRoot: string): string | undefined {
  // The file need not exist: `createRequire` only takes the folder it resolves from.
  const require = createRequire(path.join(projectRoot, "package.json"));
  try {
    return require.resolve(`${name}/package.json`);
  } catch (error) {
    // A package whose `exports` leave package.json out is still installed: find it where Node looks.
    if ((error as NodeJS.ErrnoException).code !== "ERR_PACKAGE_PATH_NOT_EXPORTED") return undefined;
    const folders = require.resolve.paths(name) ?? [];
    return folders.map((folder) => path.join(folder, name, "package.json")).find(existsSync);
  }
}

/**
 * The version of the running context-host: the nearest package.json named context-host up from here
 * (none in a host bundled into one file).
 */
export function hostPackageVersion(from: string = import.meta.dirname): string | undefined {
  for (let folder = from; ; folder = path.dirname(folder)) {
    try {
      const text = readFileSync(path.join(folder, "package.json"), "utf8");
      const manifest = JSON.parse(text) as Record<string, unknown>;
      if (manifest.name === "context-host" && typeof manifest.version === "string") return manifest.version;
    } catch {
      // No package.json here, or not the package's own: look further up.
    }
    if (path.dirname(folder) === folder) return undefined;
  }
}
