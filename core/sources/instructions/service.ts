// Owns the instruction service: which instruction files are effective for a session,
// each one's identity (a stable key), their persistence, and loading them. The System
// Context only composes the sources this service produces and renders their values.
//
// Effective instructions, in this order:
//   1. the global file (user config), if it exists;
//   2. `AGENTS.md` files from the project root down to the session's location;
//   3. nested `AGENTS.md` files discovered while tools read project files, in discovery order.
// Project files (2 and 3) can be switched off; the global file stays eligible.

import { existsSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import Type from "typebox";
import { ContextHostError } from "../../base/errors.ts";
import type { SourceEnv } from "../../registry/registry.ts";
import { absent, combine, contain, type SystemContext, unavailable } from "../../system-context/index.ts";
import type { CoreSource } from "../core-source.ts";
import { projectRootOf } from "../project-root.ts";
import { type FileRead, isInside, readTextFile } from "./files.ts";
import { globalInstructionsKey, projectInstructionsKey } from "./key.ts";

/** The name of project instruction files. */
export const instructionFileName = "AGENTS.md";

/** Environment variable that switches project instruction discovery off when `1`, `true`, `yes` or `on`. */
export const disableDiscoveryVariable = "CONTEXT_HOST_DISABLE_PROJECT_INSTRUCTIONS";

/** Environment variables (not `NodeJS.ProcessEnv`: declarations name no Node.js type). */
export type Environment = Readonly<Record<string, string | undefined>>;

/** The default global instruction file: `$XDG_CONFIG_HOME/context-host/AGENTS.md` or `~/.config/…`. */
export function defaultGlobalFile(env: Environment = process.env): string {
  const configHome = env.XDG_CONFIG_HOME ?? path.join(os.homedir(), ".config");
  return path.join(configHome, "context-host", instructionFileName);
}

/** The instruction service's settings (`createHost({ instructions })`): global file, project discovery, size limits. */
export interface InstructionSettings {
  /** The global instruction file (default `defaultGlobalFile()`); `false` for none. */
  readonly globalFile?: string | false;
  /** Discover project `AGENTS.md` files (default true, unless the environment variable says off). */
  readonly discovery?: boolean;
  /** Largest instruction file accepted (default 256 KiB). */
  readonly maxBytes?: number;
  /** Largest file a tool may read through the host (default 4 MiB). */
  readonly maxReadBytes?: number;
}

/**
 * A problem with an instruction file, reported at each read that meets it (the diagnostics
 * channel counts repeats) until the file is read again, or is gone: then it is resolved.
 */
export interface InstructionProblem {
  readonly file: string;
  readonly message: string;
}

const InstructionFile = Type.Object({ path: Type.String(), content: Type.String() });

/** One effective instruction file. */
interface EffectiveFile {
  readonly key: string;
  readonly file: string;
  /** How the model sees the file's name: project-relative, or the global file's path. */
  readonly shownAs: string;
  readonly root: string | undefined;
}

/**
 * Where the nested instruction files a session discovered are kept, per session and
 * location (the session store implements it), so a restart keeps what was discovered.
 */
export interface DiscoveryLog {
  /** Nested instruction files discovered in a session at a location, in discovery order. */
  discoveredInstructions(id: string, location: string): Promise<string[]>;
  /** Records newly discovered nested instruction files (already known ones are ignored). */
  addDiscoveredInstructions(id: string, location: string, files: readonly string[]): Promise<void>;
}

/** Reads project files for tools and records the nested instruction files on the way. */
export interface ProjectFiles {
  /**
   * Reads a project file (relative to the session's location) as UTF-8 text; refuses anything
   * outside the project. Rejects with `ProjectFileUnreadable` naming the file and why.
   */
  readFile(file: string): Promise<string>;
}

/**
 * A project file a tool asked for could not be read: it does not exist, it is refused
 * (outside the project root, binary, not UTF-8, over the size limit), or reading it failed.
 * `file` is the path as the tool gave it; `reason` says why, naming the resolved path.
 */
export class ProjectFileUnreadable extends ContextHostError {
  readonly file: string;
  readonly reason: string;
  constructor(options: { readonly file: string; readonly reason: string }) {
    super(`cannot read ${options.file}: ${options.reason}`);
    this.file = options.file;
    this.reason = options.reason;
  }
}

/**
 * Whether an instruction file may exist: anything but a clear "no such file". A file
 * that cannot be checked right now (EACCES on a folder on the way, EIO) stays
 * effective, so its read reports Unavailable Context instead of a removal.
 * (`existsSync` says false for every error, and checks the real user id, not the effective one.)
 */
function mayExist(file: string): boolean {
  try {
    statSync(file);
    return true;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code !== "ENOENT" && code !== "ENOTDIR";
  }
}

function isSwitchedOff(value: string | undefined): boolean {
  return value !== undefined && /^(1|true|yes|on)$/i.test(value.trim());
}

export class InstructionService {
  readonly #store: DiscoveryLog | undefined;
  readonly #globalFile: string | undefined;
  readonly #isDiscoveryOn: boolean;
  readonly #maxBytes: number;
  readonly #maxReadBytes: number;
  readonly #report: (problem: InstructionProblem) => void;
  readonly #resolve: (file: string) => void;
  /** Files with a reported problem not yet resolved: only these are resolved, so a healthy read costs nothing. */
  readonly #troubled = new Set<string>();

  constructor(options: {
    store?: DiscoveryLog;
    settings?: InstructionSettings;
    /** A problem with an instruction file (it holds until `resolve` names the file). */
    report?: (problem: InstructionProblem) => void;
    /** The file's problems no longer hold: it was read, or it is gone. */
    resolve?: (file: string) => void;
    env?: Environment;
  }) {
    const settings = options.settings ?? {};
    this.#store = options.store;
    this.#globalFile =
      settings.globalFile === false ? undefined : path.resolve(settings.globalFile ?? defaultGlobalFile(options.env));
    this.#isDiscoveryOn = (settings.discovery ?? true) && !isSwitchedOff((options.env ?? process.env)[disableDiscoveryVariable]);
    this.#maxBytes = settings.maxBytes ?? 256 * 1024;
    this.#maxReadBytes = settings.maxReadBytes ?? 4 * 1024 * 1024;
    this.#report = options.report ?? (() => {});
    this.#resolve = options.resolve ?? (() => {});
  }

  /** Whether project instruction files are discovered. */
  get isDiscoveryOn(): boolean {
    return this.#isDiscoveryOn;
  }

  /** The core registration that composes one Context Source per effective instruction file. */
  registration(): CoreSource {
    // Keyed in the namespace of the sources it composes (`instructions/…`), so the host
    // reserves that namespace from plugins like any core source's.
    return { key: "instructions/files", load: (env) => this.context(env) };
  }

  /** The effective instruction files of a session in its location, in order. */
  async effectiveFiles(env: SourceEnv): Promise<EffectiveFile[]> {
    const files: EffectiveFile[] = [];
    if (this.#globalFile !== undefined && this.#mayExist(this.#globalFile)) {
      files.push({ key: globalInstructionsKey, file: this.#globalFile, shownAs: this.#globalFile, root: undefined });
    }
    if (!this.#isDiscoveryOn) return files;
    const location = path.resolve(env.location);
    const { root } = projectRootOf(location);
    const seen = new Set<string>();
    const add = (file: string) => {
      if (seen.has(file) || !isInside(root, file)) return;
      seen.add(file);
      const folder = path.relative(root, path.dirname(file));
      files.push({ key: projectInstructionsKey(folder), file, shownAs: path.relative(root, file), root });
    };
    for (const folder of foldersFromRootTo(root, location)) {
      const file = path.join(folder, instructionFileName);
      if (this.#mayExist(file)) add(file);
    }
    if (env.sessionId !== undefined && this.#store !== undefined) {
      for (const file of await this.#store.discoveredInstructions(env.sessionId, location)) add(file);
    }
    return files;
  }

  /** Whether an instruction file may exist; one that is gone has no problem any more. */
  #mayExist(file: string): boolean {
    if (mayExist(file)) return true;
    this.#resolved(file);
    return false;
  }

  /** One Context Source per effective instruction file, combined in order. */
  async context(env: SourceEnv): Promise<SystemContext> {
    const files = await this.effectiveFiles(env);
    return combine(files.map((file) => this.#source(file)));
  }

  /**
   * An instruction file never blocks a Baseline: unreadable before it was ever admitted,
   * it is left out until it first loads (Unavailable Context), so one bad file cannot keep
   * a session from starting. Once admitted, unavailability keeps the admitted version.
   */
  #source(effective: EffectiveFile): SystemContext {
    return contain(
      {
        key: effective.key,
        schema: InstructionFile,
        load: async () =>
          this.#loaded(effective, await readTextFile(effective.file, { root: effective.root, maxBytes: this.#maxBytes })),
        baseline: (current) => `Instructions from ${current.path}:\n\n${current.content}`,
        update: (_previous, current) =>
          `The instructions from ${current.path} have changed. This complete current version supersedes the earlier one:\n\n${current.content}`,
        removed: (previous) => `The instructions from ${previous.path} no longer apply.`,
      },
      {
        report: (fault) =>
          this.#problem(
            effective.file,
            `${fault.phase}: ${fault.error instanceof Error ? fault.error.message : String(fault.error)}`,
          ),
        maxTextLength: Number.MAX_SAFE_INTEGER,
      },
    );
  }

  #loaded(effective: EffectiveFile, read: FileRead) {
    switch (read.kind) {
      case "text":
        this.#resolved(effective.file);
        return { path: effective.shownAs, content: read.content };
      case "missing":
        this.#resolved(effective.file);
        return absent;
      case "refused":
        this.#problem(effective.file, `refused: ${read.reason}`);
        return absent;
      case "transient":
        this.#problem(effective.file, `cannot be read right now: ${read.reason}`);
        return unavailable;
    }
  }

  /**
   * Reported at every read that meets it: the diagnostics channel keeps one record per
   * distinct problem and counts repeats, and a problem reported again after it was resolved
   * holds again. It supersedes the file's earlier problem (the latest read tells what holds).
   */
  #problem(file: string, message: string) {
    this.#resolved(file);
    this.#troubled.add(file);
    this.#report({ file, message });
  }

  /** The file was read (or is gone): its problems no longer hold. */
  #resolved(file: string) {
    if (!this.#troubled.delete(file)) return;
    this.#resolve(file);
  }

  /**
   * Project file access for a tool call of a session. Reading a file makes the
   * instruction files in the folders between the project root and it effective
   * for the session in this location, from the next Safe Provider-Turn Boundary on.
   */
  projectFiles(sessionId: string, location: string): ProjectFiles {
    const resolvedLocation = path.resolve(location);
    const { root } = projectRootOf(resolvedLocation);
    return {
      readFile: async (file) => {
        const target = path.resolve(resolvedLocation, file);
        const read = await readTextFile(target, { root, maxBytes: this.#maxReadBytes });
        switch (read.kind) {
          case "missing":
            throw new ProjectFileUnreadable({ file, reason: `no such file (${target})` });
          case "refused":
          case "transient":
            throw new ProjectFileUnreadable({ file, reason: read.reason });
          case "text":
            await this.#discover(sessionId, resolvedLocation, root, target);
            return read.content;
        }
      },
    };
  }

  async #discover(sessionId: string, location: string, root: string, file: string) {
    if (!this.#isDiscoveryOn || this.#store === undefined) return;
    const found = foldersFromRootTo(root, path.dirname(file))
      .map((folder) => path.join(folder, instructionFileName))
      .filter((candidate) => candidate !== file && existsSync(candidate));
    if (found.length > 0) await this.#store.addDiscoveredInstructions(sessionId, location, found);
  }
}

/** Folders from `root` down to `folder` (inclusive); empty if `folder` is not inside `root`. */
function foldersFromRootTo(root: string, folder: string): string[] {
  if (!isInside(root, folder)) return [];
  const parts = path
    .relative(root, folder)
    .split(path.sep)
    .filter((part) => part !== "");
  const folders = [root];
  for (const part of parts) folders.push(path.join(folders.at(-1) as string, part));
  return folders;
}
