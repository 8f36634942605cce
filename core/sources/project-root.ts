// Owns where a location's project is: the nearest folder at or above it with `.git`. The
// `core/environment` source shows it; the instruction service reads project files under it.

import { existsSync } from "node:fs";
import path from "node:path";

/** The project root of a location: the nearest folder at or above it with `.git`, else the location. */
export function projectRootOf(location: string): { root: string; isGitRepository: boolean } {
  const start = path.resolve(location);
  for (let dir = start; ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, ".git"))) return { root: dir, isGitRepository: true };
    if (path.dirname(dir) === dir) return { root: start, isGitRepository: false };
  }
}
