// Test harness for the built-in sources and the instruction service: real temporary
// folder trees (a `.git` folder marks a project root) and hosts on real temporary
// SQLite data folders, with the built-ins on, no plugins, no watching, and never the
// user's own global instruction file.

import { chmodSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import {
  createHost,
  type Host,
  type HostOptions,
  type ProviderRequest,
  type RequestMessage,
  type StoredMessage,
} from "../../core/index.ts";

/** A fresh temporary folder (real path) that every user may enter; `remove` deletes it. */
export function tempFolder(prefix: string): { readonly path: string; remove(): void } {
  const folder = realpathSync(mkdtempSync(path.join(os.tmpdir(), `context-host-${prefix}-`)));
  // mkdtemp makes 0700 folders; the unreadable-file test runs as an unprivileged user.
  chmodSync(folder, 0o755);
  return { path: folder, remove: () => rmSync(folder, { recursive: true, force: true }) };
}

/** Writes `files` (relative path → content) under `root`, creating folders on the way. */
export function writeTree(root: string, files: Readonly<Record<string, string | Uint8Array>>): void {
  for (const [relative, content] of Object.entries(files)) {
    const file = path.join(root, relative);
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, content);
  }
}

/** Makes `folder` a project root by giving it a `.git` folder. */
export function markProjectRoot(folder: string): void {
  mkdirSync(path.join(folder, ".git"), { recursive: true });
}

export type TestHostOptions = Omit<HostOptions, "dataDir" | "providers"> & { providers: HostOptions["providers"] };

/**
 * A host on `dataDir` with the built-ins on, no plugins, no watching and no global
 * instruction file unless the options say otherwise.
 */
export function openHost(dataDir: string, options: TestHostOptions): Promise<Host> {
  return createHost({
    builtins: true,
    plugins: [],
    watch: false,
    ...options,
    instructions: { globalFile: false, ...options.instructions },
    dataDir,
  });
}

/** The request of a `replied` step; fails the test otherwise. */
export function requestOf(result: Awaited<ReturnType<Host["step"]>>): ProviderRequest {
  if (result.kind !== "replied") throw new Error(`expected a replied step, got ${JSON.stringify(result)}`);
  return result.request;
}

/** The Baseline System Context of a request (the last `system` entry). */
export function baselineOf(request: ProviderRequest): string {
  return request.system.at(-1) ?? "";
}

/** `role: text` of each message, for readable comparisons. */
export function transcript(messages: readonly (StoredMessage | RequestMessage)[]): string[] {
  return messages.map((m) => `${m.role}: ${"text" in m ? m.text : m.result}`);
}

/** The texts of the Mid-Conversation System Messages of durable history. */
export async function systemUpdates(host: Host, id: string): Promise<string[]> {
  return (await host.messages(id)).filter((m) => m.role === "system-update").map((m) => m.text);
}

/** The `Instructions from …` sections of a Baseline, in order, as `path: content`. */
export function instructionSections(baseline: string): string[] {
  return baseline
    .split(/\n\n(?=Instructions from |Today's date|<environment>)/)
    .filter((section) => section.startsWith("Instructions from "))
    .map((section) => {
      const [head, ...body] = section.split("\n\n");
      return `${(head ?? "").replace(/^Instructions from /, "").replace(/:$/, "")}: ${body.join("\n\n")}`;
    });
}

/** Whether this process can drop to an unprivileged user to observe real permission errors. */
export function isRoot(): boolean {
  return typeof process.getuid === "function" && process.getuid() === 0;
}

/** The uid of `nobody`. */
export const nobody = 65534;

/**
 * Runs `action` with the effective user `nobody` when the process is root, so that a
 * `chmod 000` file really fails with EACCES (root reads it regardless). The real and
 * saved user ids stay root, so the effective id is restored afterwards.
 */
export async function asUnprivileged<T>(action: () => Promise<T>): Promise<T> {
  const { seteuid } = process;
  if (!isRoot() || seteuid === undefined) return action();
  seteuid(nobody);
  try {
    return await action();
  } finally {
    seteuid(0);
  }
}
