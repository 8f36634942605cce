// A cache on disk of the bundled worker programs (decision 092) and plugin bundles (decision 191).
// Bundling the worker's program (the entry with TypeBox, awilix and the plugin API, ~800 files)
// takes esbuild ~0.4 s of every process that runs a plugin worker or a check. A result depends
// only on its key (entry, esbuild and Node versions) and the contents of the files it was built
// from, so it is kept with their hashes and used again while every one matches. The folder is
// the user's cache ($XDG_CACHE_HOME or ~/.cache, then context-host/), read only while it and the
// file are this user's and writable by nobody else: the program runs in every plugin worker.
// Any problem with the cache means a fresh build, never an error. CONTEXT_HOST_CACHE=off: none.

import { createHash } from "node:crypto";
import {
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  type Stats,
  statSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";

/** What a build produced: its result and the absolute paths of the files (or folders) it depended on. */
export interface Built<T> {
  readonly text: T;
  readonly inputs: readonly string[];
  /** Fingerprints taken before the build read each input; the others are taken when it is stored. */
  readonly fingerprints?: ReadonlyMap<string, string>;
  /** False when the build depends on something the inputs cannot vouch for (asked after the build): it is not stored. */
  readonly isCacheable?: () => boolean;
}
export type BuiltProgram = Built<string>;

/** The folder programs are cached in, or `undefined` when caching is off or there is no home folder. */
export function programCacheDir(env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (env.CONTEXT_HOST_CACHE === "off") return undefined;
  const base = env.XDG_CACHE_HOME || (os.homedir() === "" ? undefined : path.join(os.homedir(), ".cache"));
  return base === undefined ? undefined : path.join(base, "context-host");
}

interface CacheFile<T> {
  readonly key: string;
  /** Each input, its `fingerprint` when the result was built and, when it had settled, its `identity` then. */
  readonly inputs: ReadonlyArray<readonly [string, string, string?]>;
  readonly text: T;
}

export const hashOf = (data: string | Buffer) => createHash("sha256").update(data).digest("hex");

/** A file's SHA-256, a folder's listing (names, folders marked), "absent", or why it cannot be read. */
export function fingerprint(file: string): string {
  try {
    const stat = statSync(file, { throwIfNoEntry: false });
    if (stat === undefined) return "absent";
    if (!stat.isDirectory()) return hashOf(readFileSync(file));
    const names = readdirSync(file, { withFileTypes: true }).map((e) => (e.isDirectory() ? `${e.name}/` : e.name));
    return `folder ${hashOf(names.sort().join("\n"))}`;
  } catch (error) {
    return `unreadable ${(error as NodeJS.ErrnoException).code}`;
  }
}

/**
 * What vouches for an input without reading it (decision 193): any change to a file or a
 * folder's entries moves its ctime, which no one can set back (npm sets mtimes, not ctimes).
 */
const identity = (stat: Stats) => `${stat.dev}:${stat.ino}:${stat.size}:${stat.mtimeMs}:${stat.ctimeMs}`;

/** How long ago an input's ctime must lie for its identity to be kept: a change within the file system's time step would not move it. */
const settledMs = 2000;

/** Whether `file` (a folder or a file) is this user's and writable by nobody else. */
function isPrivate(file: string): boolean {
  const stat = lstatSync(file, { throwIfNoEntry: false });
  if (stat === undefined || stat.isSymbolicLink()) return false;
  const uid = process.getuid?.();
  return (uid === undefined || stat.uid === uid) && (stat.mode & 0o022) === 0;
}

/** The cached result for `key` if the file is there, private and built from inputs that have not changed. */
function read<T>(dir: string, file: string, key: string): T | undefined {
  try {
    if (!isPrivate(dir) || !isPrivate(file)) return undefined;
    const cached = JSON.parse(readFileSync(file, "utf8")) as CacheFile<T>;
    if (cached.key !== key || cached.text === undefined || !Array.isArray(cached.inputs)) return undefined;
    for (const [input, print, id] of cached.inputs) {
      const stat = id === undefined ? undefined : statSync(input, { throwIfNoEntry: false });
      if ((stat === undefined || identity(stat) !== id) && fingerprint(input) !== print) return undefined;
    }
    utimesSync(file, new Date(), new Date()); // recently used: kept when the folder is pruned
    return cached.text;
  } catch {
    return undefined;
  }
}

/** Stores a build: written to a temp file, then renamed into place, so a reader never sees half of one. */
function write<T>(dir: string, file: string, key: string, built: Built<T>, prefix: string, kept: number): void {
  const temp = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    if (!isPrivate(dir)) return;
    const inputs = built.inputs.map((input) => {
      // The identity is taken first: a change after it makes the contents read here disagree with it.
      const stat = statSync(input, { throwIfNoEntry: false });
      const print = fingerprint(input);
      const taken = built.fingerprints?.get(input) ?? print;
      const isSettled = stat !== undefined && stat.ctimeMs < Date.now() - settledMs && print === taken;
      return isSettled ? ([input, print, identity(stat)] as const) : ([input, taken] as const);
    });
    writeFileSync(temp, JSON.stringify({ key, inputs, text: built.text } satisfies CacheFile<T>), { mode: 0o600 });
    renameSync(temp, file);
    prune(dir, prefix, kept);
  } catch {
    try {
      rmSync(temp, { force: true });
    } catch {
      // No temp file was made (the folder is missing or is not one).
    }
  }
}

/** How many programs the folder keeps: each entry file (each install, each copy of the sources) has its own. */
export const keptPrograms = 8;

/** Removes all but the `kept` most recently used results of a kind, and temp files a stopped writer left (listed, not each looked at, while fewer). */
function prune(dir: string, prefix: string, kept: number): void {
  const names = readdirSync(dir).filter((name) => name.startsWith(prefix));
  if (names.length <= kept) return;
  const results = names
    .map((name) => ({ file: path.join(dir, name), used: statSync(path.join(dir, name)).mtimeMs }))
    .sort((a, b) => b.used - a.used);
  for (const { file } of results.slice(kept)) rmSync(file, { force: true });
}

/**
 * The result for `key` (a description of everything but the inputs' contents that the
 * build depends on): the cached one when its inputs are unchanged, else `build()`'s, then
 * cached as one of the `kept` most recently used of its `kind`.
 */
export async function cachedBuild<T>(
  kind: string,
  kept: number,
  key: string,
  build: () => Promise<Built<T>>,
  dir = programCacheDir(),
): Promise<T> {
  if (dir === undefined) return (await build()).text;
  const file = path.join(dir, `${kind}-${hashOf(key).slice(0, 32)}.json`);
  const cached = read<T>(dir, file, key);
  if (cached !== undefined) return cached;
  const built = await build();
  // Stored once the caller has its result: a reload does not wait for the check and the write.
  setImmediate(() => built.isCacheable?.() !== false && write(dir, file, key, built, `${kind}-`, kept));
  return built.text;
}

/**
 * Where V8's code cache of the worker program `source` is kept (decision 193), and its bytes
 * when a private one is there. The name binds it to the source and this V8; V8 checks its
 * own version and flags again and compiles afresh when they differ (no error).
 */
export function storedCodeCache(source: string, dir = programCacheDir()): { file?: string; bytes?: Buffer } {
  if (dir === undefined) return {};
  const file = path.join(dir, `code-cache-${hashOf(`${process.versions.v8}\n${source}`).slice(0, 32)}.bin`);
  try {
    if (isPrivate(dir) && isPrivate(file)) {
      utimesSync(file, new Date(), new Date());
      return { file, bytes: readFileSync(file) };
    }
    prune(dir, "code-cache-", keptPrograms);
  } catch {
    // None to read: the program is compiled afresh.
  }
  return { file };
}

/** The worker program for `key`, cached (decision 092). */
export const cachedProgram = (key: string, build: () => Promise<BuiltProgram>, dir: string | undefined = programCacheDir()) =>
  cachedBuild("worker-program", keptPrograms, key, build, dir);
