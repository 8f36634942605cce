// Finds the nearest package.json at or above a folder, up to the project root (the
// nearest folder with `.git`), and reads its scripts with one read of the file, so a
// value always reflects one version of it.

import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import path from "node:path";

export interface Script {
  readonly name: string;
  readonly command: string;
}

/** The value of `package-scripts/scripts`. */
export interface PackageScripts {
  /** The package's `name`, or `null` when it has none. */
  readonly name: string | null;
  /** The folder holding the package.json (scripts run there). */
  readonly directory: string;
  /**
   * Scripts in file order. An array of pairs, not a record: a script may be called
   * `constructor` or `__proto__`, keys a Context Snapshot never stores.
   */
  readonly scripts: Script[];
  /** Scripts left out beyond the limit. */
  readonly omitted: number;
  /** The `packageManager` field (Corepack), when the package declares one. */
  readonly packageManager?: string;
}

export interface Limits {
  readonly maxScripts: number;
  readonly maxCommandLength: number;
}

export type Observed =
  | { readonly kind: "package"; readonly value: PackageScripts }
  | { readonly kind: "none" }
  | { readonly kind: "unreadable"; readonly file: string; readonly reason: string };

const maxNameLength = 214; // npm's limit for package names
const maxScriptNameLength = 100;
const maxPackageManagerLength = 100;

/** Shortens `text` to `max` characters, marking the cut with an ellipsis. */
export function truncate(text: string, max: number): string {
  const chars = Array.from(text);
  return chars.length <= max ? text : `${chars.slice(0, Math.max(0, max - 1)).join("")}…`;
}

/** One line per command: whitespace (newlines included) collapses to single spaces. */
function oneLine(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The value of a parsed package.json. Pure; anything JSON.parse returned is accepted. */
export function scriptsOf(manifest: unknown, directory: string, limits: Limits): PackageScripts {
  const record = isRecord(manifest) ? manifest : {};
  const name =
    typeof record.name === "string" && record.name.trim() !== "" ? truncate(oneLine(record.name), maxNameLength) : null;
  const declared = isRecord(record.scripts) ? record.scripts : {};
  const all: Script[] = [];
  for (const [scriptName, command] of Object.entries(declared)) {
    if (typeof command !== "string") continue; // npm cannot run it either
    all.push({
      name: truncate(oneLine(scriptName), maxScriptNameLength),
      command: truncate(oneLine(command), limits.maxCommandLength),
    });
  }
  const scripts = all.slice(0, limits.maxScripts);
  const packageManager =
    typeof record.packageManager === "string" && record.packageManager.trim() !== ""
      ? truncate(oneLine(record.packageManager), maxPackageManagerLength)
      : undefined;
  return {
    name,
    directory,
    scripts,
    omitted: all.length - scripts.length,
    ...(packageManager === undefined ? {} : { packageManager }),
  };
}

/** Errors that mean "no package.json here": look in the parent folder. */
const notHere = new Set(["ENOENT", "ENOTDIR", "EISDIR"]);

/**
 * Observes the nearest package.json at or above `location` once, never looking above the
 * project root (a folder with `.git`): a package.json outside the project is not its own.
 * Never throws.
 */
export async function observePackage(location: string, limits: Limits): Promise<Observed> {
  let directory = path.resolve(location);
  for (;;) {
    const file = path.join(directory, "package.json");
    let text: string | undefined;
    try {
      text = await readFile(file, "utf8");
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === undefined || !notHere.has(code)) {
        return { kind: "unreadable", file, reason: error instanceof Error ? error.message : String(error) };
      }
    }
    if (text !== undefined) {
      let manifest: unknown;
      try {
        // Being written right now (empty or cut short) looks the same as broken: unavailable.
        manifest = JSON.parse(text.replace(/^\uFEFF/, ""));
      } catch (error) {
        return { kind: "unreadable", file, reason: `invalid JSON: ${error instanceof Error ? error.message : String(error)}` };
      }
      return { kind: "package", value: scriptsOf(manifest, directory, limits) };
    }
    const parent = path.dirname(directory);
    if (parent === directory || existsSync(path.join(directory, ".git"))) return { kind: "none" };
    directory = parent;
  }
}
