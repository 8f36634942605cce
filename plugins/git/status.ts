// Observes a working folder's git state with one `git status` run, so the branch,
// HEAD and the count of changed files always come from the same moment.

import { execFile } from "node:child_process";
import { stat } from "node:fs/promises";

/** The value of `git/status`: one coherent observation. */
export interface GitStatus {
  /** The checked-out branch, or `null` when HEAD is detached. */
  readonly branch: string | null;
  /** Abbreviated commit of HEAD, or `null` before the first commit. */
  readonly head: string | null;
  /** Changed paths: staged, unstaged, conflicted and untracked (an untracked folder counts once). */
  readonly changed: number;
}

/** What one observation found. */
export type Observed =
  | { readonly kind: "status"; readonly status: GitStatus }
  | { readonly kind: "not-a-repository" }
  | { readonly kind: "failed"; readonly reason: string };

export interface GitOptions {
  /** The git program: a name looked up on PATH or a path. */
  readonly gitPath: string;
  /** How long git may run before it is killed and the observation counts as failed. */
  readonly timeoutMs: number;
}

/** Length of the abbreviated HEAD commit. */
const shortShaLength = 7;
/** Longest branch name kept in the value (git allows very long ones). */
const maxBranchLength = 200;
/** Output beyond this (hundreds of thousands of changes) makes the observation fail rather than exhaust memory. */
const maxOutputBytes = 64 * 1024 * 1024;

/**
 * `status` only reads, and `--no-optional-locks` / `GIT_OPTIONAL_LOCKS=0` keep it from
 * refreshing the index, so observing never takes `index.lock` from under the user's own
 * git commands. `-z` output is never quoted; `--porcelain=v2 --branch` adds the
 * `# branch.oid` and `# branch.head` headers.
 */
const statusArgs = ["--no-optional-locks", "status", "--porcelain=v2", "--branch", "-z", "--untracked-files=normal"];

/** Variables that would point git at another repository than the working folder's. */
const repositoryVariables = [
  "GIT_DIR",
  "GIT_WORK_TREE",
  "GIT_INDEX_FILE",
  "GIT_OBJECT_DIRECTORY",
  "GIT_ALTERNATE_OBJECT_DIRECTORIES",
  "GIT_COMMON_DIR",
  "GIT_NAMESPACE",
  "GIT_PREFIX",
];

function gitEnvironment(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of repositoryVariables) delete env[name];
  delete env.LANGUAGE;
  // English messages, so "not a git repository" can be recognized.
  env.LC_ALL = "C";
  env.GIT_OPTIONAL_LOCKS = "0";
  env.GIT_TERMINAL_PROMPT = "0";
  return env;
}

const notARepository = /not a git repository|must be run in a work tree/i;

function firstLine(text: string): string {
  return (
    text
      .split("\n")
      .map((line) => line.trim())
      .find((line) => line.length > 0) ?? ""
  );
}

/** Parses `git status --porcelain=v2 --branch -z` output, or `undefined` if it is not that. */
export function parseStatus(output: string): GitStatus | undefined {
  const fields = output.split("\0");
  let oid: string | undefined;
  let branchHead: string | undefined;
  let changed = 0;
  for (let i = 0; i < fields.length; i++) {
    const field = fields[i] as string;
    if (field === "") continue;
    if (field.startsWith("# branch.oid ")) oid = field.slice("# branch.oid ".length);
    else if (field.startsWith("# branch.head ")) branchHead = field.slice("# branch.head ".length);
    else if (field.startsWith("#")) continue;
    else if (field.startsWith("1 ") || field.startsWith("u ") || field.startsWith("? ")) changed++;
    else if (field.startsWith("2 ")) {
      // A rename or copy: its original path follows as its own field.
      changed++;
      i++;
    } else if (field.startsWith("! ")) continue;
    else return undefined;
  }
  if (oid === undefined || branchHead === undefined) return undefined;
  const head = /^[0-9a-f]{7,}$/.test(oid) ? oid.slice(0, shortShaLength) : null;
  const branch = branchHead === "(detached)" ? null : branchHead.slice(0, maxBranchLength);
  return { branch, head, changed };
}

interface ExecResult {
  readonly error: (Error & { code?: unknown; killed?: boolean; signal?: NodeJS.Signals | null }) | null;
  readonly stdout: string;
  readonly stderr: string;
}

function run(options: GitOptions, cwd: string): Promise<ExecResult> {
  return new Promise((resolve) => {
    execFile(
      options.gitPath,
      statusArgs,
      {
        cwd,
        env: gitEnvironment(),
        timeout: options.timeoutMs,
        killSignal: "SIGKILL",
        maxBuffer: maxOutputBytes,
        windowsHide: true,
        encoding: "utf8",
      },
      (error, stdout, stderr) => resolve({ error, stdout, stderr }),
    );
  });
}

async function isDirectory(location: string): Promise<boolean | undefined> {
  try {
    return (await stat(location)).isDirectory();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return false;
    return undefined;
  }
}

/** Observes the git state of `location` once. Never throws. */
export async function observeGit(options: GitOptions, location: string): Promise<Observed> {
  // A missing folder is certainly not in a repository; checking first also keeps
  // spawn's ENOENT meaning only "no such git program".
  const folder = await isDirectory(location);
  if (folder === false) return { kind: "not-a-repository" };
  if (folder === undefined) return { kind: "failed", reason: `cannot inspect the working folder ${location}` };

  const { error, stdout, stderr } = await run(options, location);
  if (error !== null) {
    if (error.killed === true || error.signal != null) {
      return { kind: "failed", reason: `git did not finish within ${options.timeoutMs} ms` };
    }
    if (error.code === "ENOENT") return { kind: "failed", reason: `git program not found: ${options.gitPath}` };
    if (typeof error.code === "string") return { kind: "failed", reason: `cannot run git: ${error.message}` };
    if (notARepository.test(stderr)) return { kind: "not-a-repository" };
    return { kind: "failed", reason: `git exited with code ${String(error.code)}: ${firstLine(stderr) || "no message"}` };
  }
  const status = parseStatus(stdout);
  if (status === undefined) return { kind: "failed", reason: "git status printed output this plugin does not understand" };
  return { kind: "status", status };
}
