// Owns reading instruction and project files safely: nothing outside the project
// root (real paths, so symlinks cannot escape), no oversize or non-UTF-8 file
// half-loaded, and a clear line between a file that is gone and one that cannot be
// read right now.

import { promises as fs } from "node:fs";
import path from "node:path";

/** The outcome of reading one file. */
export type FileRead =
  | { readonly kind: "text"; readonly content: string; readonly realPath: string }
  /** The file does not exist (any more): a removal. */
  | { readonly kind: "missing" }
  /** The file exists but is not acceptable (outside the root, too big, not text). */
  | { readonly kind: "refused"; readonly reason: string }
  /** The file could not be read right now (EACCES, EIO, EMFILE…): Unavailable Context. */
  | { readonly kind: "transient"; readonly reason: string };

const missingCodes = new Set(["ENOENT", "ENOTDIR"]);

/** Whether `child` is `root` or inside it. Both must be real, absolute paths. */
export function isInside(root: string, child: string): boolean {
  const relative = path.relative(root, child);
  return relative === "" || (!relative.startsWith("..") && !path.isAbsolute(relative));
}

function codeOf(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | undefined)?.code;
}

/**
 * Reads `file` as UTF-8 text. With `root`, the file's real path must lie inside the
 * root's real path. Files over `maxBytes`, with invalid UTF-8 or NUL bytes are refused.
 */
export async function readTextFile(file: string, options: { root?: string; maxBytes: number }): Promise<FileRead> {
  // A path outside the root is refused before the file system is asked anything, so a
  // missing file outside the project cannot be told from an existing one.
  if (options.root !== undefined && !isInside(path.resolve(options.root), path.resolve(file))) {
    return { kind: "refused", reason: `${file} is outside the project root ${path.resolve(options.root)}` };
  }
  let realPath: string;
  try {
    realPath = await fs.realpath(file);
    if (options.root !== undefined) {
      const realRoot = await fs.realpath(options.root);
      if (!isInside(realRoot, realPath)) {
        return { kind: "refused", reason: `${file} resolves to ${realPath}, outside the project root ${realRoot}` };
      }
    }
    const stat = await fs.stat(realPath);
    if (!stat.isFile()) return { kind: "refused", reason: `${file} is not a regular file` };
    if (stat.size > options.maxBytes) {
      return { kind: "refused", reason: `${file} is ${stat.size} bytes, over the limit of ${options.maxBytes}` };
    }
    const bytes = await fs.readFile(realPath);
    if (bytes.length > options.maxBytes) {
      return { kind: "refused", reason: `${file} is ${bytes.length} bytes, over the limit of ${options.maxBytes}` };
    }
    if (bytes.includes(0)) return { kind: "refused", reason: `${file} is binary (it contains NUL bytes)` };
    let content: string;
    try {
      content = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    } catch {
      return { kind: "refused", reason: `${file} is not UTF-8 text` };
    }
    return { kind: "text", content, realPath };
  } catch (error) {
    if (missingCodes.has(codeOf(error) ?? "")) return { kind: "missing" };
    return {
      kind: "transient",
      reason: `${file}: ${codeOf(error) ?? ""} ${error instanceof Error ? error.message : String(error)}`.trim(),
    };
  }
}
