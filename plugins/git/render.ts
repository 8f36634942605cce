// Pure renderers of `git/status`: the newly effective state, never a diff.

import type { GitStatus } from "./status.ts";

function plural(count: number, one: string, many: string): string {
  return count === 1 ? `1 ${one}` : `${count} ${many}`;
}

/** "on branch main at abc1234, 3 changed files" */
export function describeStatus(status: GitStatus): string {
  const at = status.head === null ? "" : ` at ${status.head}`;
  const where =
    status.branch === null
      ? `detached HEAD${at}`
      : status.head === null
        ? `on branch ${status.branch} (no commits yet)`
        : `on branch ${status.branch}${at}`;
  const changes = status.changed === 0 ? "no changed files" : plural(status.changed, "changed file", "changed files");
  return `${where}, ${changes}`;
}

export function renderBaseline(status: GitStatus): string {
  return `Git: ${describeStatus(status)}.`;
}

export function renderUpdate(_previous: GitStatus, status: GitStatus): string {
  return `Git status is now: ${describeStatus(status)}.`;
}

export function renderRemoved(_previous: GitStatus): string {
  return "The working folder is no longer a git repository.";
}
