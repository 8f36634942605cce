// Owns which files are plugins: those of a plugin folder, and plugin packages (decision 130),
// found by name the way Node resolves packages from the host project, declaring their plugin
// modules in their package.json (`"context-host": { "plugins": [...] }`), loaded only when
// their peer range of context-host admits the host's version. What it finds is plain data;
// the plugin set decides what to load and what to report.

import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import semver from "semver";
import Type from "typebox";
import { Compile } from "typebox/compile";
import { messageOf } from "../base/errors.ts";

/** A plugin file; `id` (file or folder name) orders loading. */
export interface PluginEntryFile {
  readonly id: string;
  readonly file: string;
}

const pluginFile = /^[^._][^/]*\.(ts|js)$/;
const notPlugin = /\.(d|test|spec)\.(ts|js)$/;

/** The plugins of one folder, sorted: `.ts`/`.js` files, and folders with an `index.ts` (or `index.js`). A missing folder has none. */
export function discoverPlugins(folder: string): PluginEntryFile[] {
  if (!existsSync(folder)) return [];
  const found: PluginEntryFile[] = [];
  for (const dirent of readdirSync(folder, { withFileTypes: true })) {
    const name = dirent.name;
    if (name.startsWith(".") || name.startsWith("_") || name === "node_modules") continue;
    const full = path.join(folder, name);
    if (dirent.isFile() && pluginFile.test(name) && !notPlugin.test(name)) {
      found.push({ id: name.replace(/\.(ts|js)$/, ""), file: full });
    } else if (dirent.isDirectory()) {
      const index = indexOf(full);
      if (index !== undefined) found.push({ id: name, file: index });
    }
  }
  return found.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : a.file < b.file ? -1 : 1));
}

const indexOf = (folder: string) => ["index.ts", "index.js"].map((f) => path.join(folder, f)).find((f) => existsSync(f));

const pluginsField = "context-host";

/** What a plugin package is, once found. */
export interface PluginPackage {
  readonly name: string;
  readonly version: string;
  /** The package's folder (symbolic links resolved, as Node resolves it). */
  readonly root: string;
  /** Its package.json, and the hash of its text: a change (an `npm update`) reloads its plugins. */
  readonly manifest: string;
  readonly manifestHash: string;
  /** Its `peerDependencies["context-host"]`, when it declares one. */
  readonly peerRange: string | undefined;
}

/**
 * Where an install, update or removal of a package shows: the entry `entry` of `folder`
 * (`tides` in node_modules, or `@moon` until node_modules/@moon exists; `package.json` in
 * the package's own folder). npm replaces a package's folder whole, with files as old as the
 * tarball's, so watching these folders is what sees an update (decision 131).
 */
export interface InstallPlace {
  readonly folder: string;
  readonly entry: string;
}

/** What looking a package up found: its plugins and the problems that keep some or all out, or where it was looked for in vain. */
export type PackageLookup = (
  | { readonly kind: "missing"; readonly name: string; readonly file: string; readonly problem: string }
  | {
      readonly kind: "found";
      readonly package: PluginPackage;
      readonly plugins: readonly PluginEntryFile[];
      readonly problems: readonly string[];
    }
) & {
  /** Where an install or update of it would show; none when no folder Node looks in exists. */
  readonly installPlaces: readonly InstallPlace[];
};

// The fields of a plugin package's package.json the host reads; the rest is npm's.
const PluginManifest = Type.Object({
  name: Type.String({ minLength: 1 }),
  version: Type.String({ minLength: 1 }),
  peerDependencies: Type.Optional(Type.Record(Type.String(), Type.String())),
  [pluginsField]: Type.Optional(
    Type.Object({ plugins: Type.Array(Type.String({ minLength: 1 }), { minItems: 1 }) }, { additionalProperties: false }),
  ),
});
const manifestValidator = Compile(PluginManifest);

const packageName = /^(?:@[a-z0-9][a-z0-9._~-]*\/)?[a-z0-9~][a-z0-9._~-]*$/;

/** Whether `text` can name an npm package. */
export function isPackageName(text: string): boolean {
  return text.length <= 214 && packageName.test(text);
}

/** Looks package `name` up from `projectRoot` as Node would, reads what it declares and checks its peer range against `hostVersion`. */
export function lookUpPackage(name: string, projectRoot: string, hostVersion: string | undefined): PackageLookup {
  const installPlaces = installPlacesOf(name, projectRoot);
  const missing = (file: string, problem: string): PackageLookup => ({ kind: "missing", name, file, problem, installPlaces });
  const file = installedManifest(name, projectRoot);
  if (file === undefined) {
    return missing(
      path.join(projectRoot, "node_modules", name),
      `${JSON.stringify(name)}: no such file or folder in ${projectRoot}, and no installed package ${name} (npm i ${name})`,
    );
  }
  let text: string;
  let manifest: unknown;
  try {
    text = readFileSync(file, "utf8");
    manifest = JSON.parse(text);
  } catch (error) {
    return missing(file, `package ${name}: its package.json cannot be read: ${messageOf(error)}`);
  }
  if (!manifestValidator.Check(manifest)) {
    const first = manifestValidator.Errors(manifest)[0];
    const field = (first?.instancePath ?? "").replace(/^\//, "").replaceAll("/", ".") || "(file)";
    return missing(file, `package ${name}: package.json ${field}: ${first?.message ?? "invalid"}`);
  }
  const pluginPackage: PluginPackage = {
    name,
    version: manifest.version,
    root: path.dirname(file),
    manifest: file,
    manifestHash: createHash("sha256").update(text).digest("hex"),
    peerRange: manifest.peerDependencies?.["context-host"],
  };
  const found = (plugins: readonly PluginEntryFile[], problems: readonly string[]): PackageLookup => ({
    kind: "found",
    package: pluginPackage,
    plugins,
    problems,
    installPlaces,
  });
  const label = `${name}@${manifest.version}`;
  const incompatibility = checkPeerRange(pluginPackage.peerRange, hostVersion);
  if (incompatibility !== undefined) return found([], [`${label}: ${incompatibility}`]);
  const declared = manifest[pluginsField]?.plugins;
  if (declared === undefined)
    return found([], [`${label} declares no plugins: its package.json needs "${pluginsField}": { "plugins": ["plugins/x.ts"] }`]);
  const plugins: PluginEntryFile[] = [];
  const problems: string[] = [];
  for (const entry of declared) {
    const declaredAt = path.resolve(pluginPackage.root, entry);
    const relative = path.relative(pluginPackage.root, declaredAt);
    const names = `${label}: "${pluginsField}".plugins names ${JSON.stringify(entry)}`;
    const here = relative.startsWith("..") || path.isAbsolute(relative) ? null : pluginsAt(declaredAt);
    if (here === null) problems.push(`${names}, which is outside the package`);
    else if (here === undefined) problems.push(`${names}, which the installed package does not have (is it in "files"?)`);
    else if (here.length === 0) problems.push(`${names}, a folder with no plugin in it`);
    else plugins.push(...here);
  }
  return found(plugins, problems);
}

/**
 * Why `hostVersion` does not satisfy a package's peer range of context-host (none: it does,
 * or there is none). A prerelease of the host counts as its version: 0.2.0-rc.1 satisfies `>=0.1`.
 */
export function checkPeerRange(range: string | undefined, hostVersion: string | undefined): string | undefined {
  if (range === undefined || hostVersion === undefined) return undefined;
  if (semver.validRange(range) === null) return `its peer range of context-host ${JSON.stringify(range)} is not a semver range`;
  if (semver.satisfies(hostVersion, range, { includePrerelease: true })) return undefined;
  return `needs context-host ${range} (peerDependencies), but this host is context-host ${hostVersion}; its plugins are not loaded`;
}

/** The plugins at a declared path: a plugin file, a plugin folder, or a folder of plugins; undefined when nothing is there. */
function pluginsAt(file: string): PluginEntryFile[] | undefined {
  let isFile: boolean;
  try {
    isFile = statSync(file).isFile();
  } catch {
    return undefined;
  }
  if (isFile) return [{ id: path.basename(file).replace(/\.(ts|js|mts|mjs|cts|cjs)$/, ""), file }];
  const index = indexOf(file);
  if (index !== undefined) return [{ id: path.basename(file), file: index }];
  return discoverPlugins(file);
}

/** Where package `name` is installed as Node looks for it (else where `npm i` would put it), and its package.json when its folder exists. */
function installPlacesOf(name: string, projectRoot: string): InstallPlace[] {
  const folders = createRequire(path.join(projectRoot, "package.json")).resolve.paths(name) ?? [];
  const base = folders.find((folder) => existsSync(path.join(folder, name))) ?? folders.find((folder) => existsSync(folder));
  if (base === undefined) return [];
  const own = path.join(base, name);
  const manifest = existsSync(own) ? [{ folder: own, entry: "package.json" }] : [];
  const [first, rest] = name.split("/") as [string, string | undefined];
  if (rest !== undefined && existsSync(path.join(base, first)))
    return [{ folder: path.join(base, first), entry: rest }, ...manifest];
  return [{ folder: base, entry: first }, ...manifest];
}

/** The package.json of package `name` where Node finds it from `projectRoot`, or undefined when it is not installed. */
export function installedManifest(name: string, projectRoot: string): string | undefined {
  // The file need not exist: `createRequire` only takes the folder it resolves from.
  const require = createRequire(path.join(projectRoot, "package.json"));
  try {
    return require.resolve(`${name}/package.json`);
  } catch (error) {
    // A package whose `exports` leave package.json out is still installed: find it where Node looks.
    if ((error as NodeJS.ErrnoException).code !== "ERR_PACKAGE_PATH_NOT_EXPORTED") return undefined;
    return (require.resolve.paths(name) ?? []).map((folder) => path.join(folder, name, "package.json")).find(existsSync);
  }
}

/** The version of the running context-host: the nearest package.json named context-host up from here (none in a host bundled into one file). */
export function hostPackageVersion(from: string = import.meta.dirname): string | undefined {
  for (let folder = from; ; folder = path.dirname(folder)) {
    const file = path.join(folder, "package.json");
    if (existsSync(file)) {
      try {
        const manifest = JSON.parse(readFileSync(file, "utf8")) as { name?: unknown; version?: unknown };
        if (manifest.name === "context-host" && typeof manifest.version === "string") return manifest.version;
      } catch {
        // Not the package's own manifest: look further up.
      }
    }
    if (path.dirname(folder) === folder) return undefined;
  }
}
