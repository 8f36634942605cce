// Owns the stable Context Source key of an instruction file, derived from its
// project-relative folder, so the same file keeps its key across sessions and restarts.

import { createHash } from "node:crypto";

/** The key of the global instruction file. */
export const globalInstructionsKey = "instructions/global";

/**
 * The key of a project instruction file from its project-relative folder: `instructions/project`
 * for the root, `instructions/project/<folder>` below it. Characters a key cannot hold are
 * replaced; when anything was replaced, a short hash of the exact folder keeps keys distinct.
 */
export function projectInstructionsKey(relativeFolder: string): string {
  const folder = relativeFolder
    .split(/[\\/]+/)
    .filter((part) => part !== "" && part !== ".")
    .join("/");
  if (folder === "") return "instructions/project";
  const sanitized = folder
    .split("/")
    .map((part) => part.replace(/[^a-z0-9._-]/g, "-").replace(/^[^a-z0-9]/, "x"))
    .join("/");
  const suffix = sanitized === folder ? "" : `-${createHash("sha256").update(folder).digest("hex").slice(0, 8)}`;
  return `instructions/project/${sanitized}${suffix}`;
}
