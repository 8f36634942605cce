// A cache on disk of the bundled worker programs (decision 092). Bundling a worker's
// program (the entry with TypeBox, awilix and the plugin API, ~800 files) takes esbuild
// ~0.4 s of a process's start, and every process that runs a plugin worker or a check
// pays it: `context-host render`, `check`, `dev`, a host. The program depends only on its
// entry, the esbuild and Node versions and the contents of the files it was built from, so
// it is kept with the hash of each of those files and used again while every one matches.
//
// The folder is the user's own cache ($XDG_CACHE_HOME or ~/.cache, then context-host/):
// a file there is read only when the folder and the file belong to this user and nobody
// else can write them, since the program runs in every plugin worker. Any problem with the
// cache (no home folder, a full disk, a damaged file) means a fresh build, never an error.
// CONTEXT_HOST_CACHE=off turns the cache off.

import { createHash } from "node:crypto";
import {
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";

/** What a build produced: the program's text and the absolute paths of the files it read. */
export interface BuiltProgram {
  readonly text: string;
  readonly inputs: readonly string[];
}

/** The folder programs are cached in, or `undefined` when caching is off or there is no home folder. */
export function programCacheDir(env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (env.CONTEXT_HOST_CACHE === "off") return undefined;
  const base = env.XDG_CACHE_HOME || (os.homedir() === "" ? undefined : path.join(os.homedir(), ".cache"));
  return base === undefined ? undefined : path.join(base, "context-host");
}

interface CacheFile {
  readonly key: string;
  /** Each input file and the SHA-256 of its contents when the program was built. */
  readonly inputs: ReadonlyArray<readonly [string, string]>;
  readonly text: string;
}

const hashOf = (data: string | Buffer) => createHash("sha256").update(data).digest("hex");

/** Whether `file` (a folder or a file) is this user's and writable by nobody else. */
function isPrivate(file: string): boolean {
  const stat = lstatSync(file, { throwIfNoEntry: false });
  if (stat === undefined || stat.isSymbolicLink()) return false;
  const uid = process.getuid?.();
  return (uid === undefined || stat.uid === uid) && (stat.mode & 0o022) === 0;
}

/** The cached text for `key` if the file is there, private and built from inputs that have not changed. */
function read(dir: string, file: string, key: string): string | undefined {
  try {
    if (!isPrivate(dir) || !isPrivate(file)) return undefined;
    const cached = JSON.parse(readFileSync(file, "utf8")) as CacheFile;
    if (cached.key !== key || typeof cached.text !== "string" || !Array.isArray(cached.inputs)) return undefined;
    for (const [input, hash] of cached.inputs) if (hashOf(readFileSync(input)) !== hash) return undefined;
    const now = new Date();
    utimesSync(file, now, now); // recently used: kept when the folder is pruned
    return cached.text;
  } catch {
    return undefined;
  }
}

/** Stores a build: written to a temp file, then renamed into place, so a reader never sees half of one. */
function write(dir: string, file: string, key: string, built: BuiltProgram): void {
  const temp = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    if (!isPrivate(dir)) return;
    const inputs = built.inputs.map((input) => [input, hashOf(readFileSync(input))] as const);
    writeFileSync(temp, JSON.stringify({ key, inputs, text: built.text } satisfies CacheFile), { mode: 0o600 });
    renameSync(temp, file);
    prune(dir);
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

/** Removes all but the `keptPrograms` most recently used programs. */
function prune(dir: string): void {
  const programs = readdirSync(dir)
    .filter((name) => name.startsWith("worker-program-") && name.endsWith(".json"))
    .map((name) => ({ file: path.join(dir, name), used: statSync(path.join(dir, name)).mtimeMs }))
    .sort((a, b) => b.used - a.used);
  for (const { file } of programs.slice(keptPrograms)) rmSync(file, { force: true });
}

/**
 * The program for `key` (a description of everything but the input files' contents that
 * the build depends on): the cached one when its inputs are unchanged, else `build()`'s,
 * then cached.
 */
export async function cachedProgram(
  key: string,
  build: () => Promise<BuiltProgram>,
  dir: string | undefined = programCacheDir(),
): Promise<string> {
  if (dir === undefined) return (await build()).text;
  const file = path.join(dir, `worker-program-${hashOf(key).slice(0, 32)}.json`);
  const cached = read(dir, file, key);
  if (cached !== undefined) return cached;
  const built = await build();
  write(dir, file, key, built);
  return built.text;
}
