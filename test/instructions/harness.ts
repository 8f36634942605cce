// Test harness for the built-in sources and the instruction service: real temporary
// folder trees (a `.git` folder marks a project root) and hosts on real temporary
// SQLite data folders, with the built-ins on, no plugins, no watching, and never the
// user's own global instruction file; `hostsPerTest` makes and removes them per test.

import { chmodSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import {
  createHost,
  type Host,
  type HostOptions,
  type ProviderRequest,
  type RequestMessage,
  type ScriptedProvider,
  type ScriptedTurn,
  scriptedProvider,
} from "../../core/index.ts";
import type { StoredMessage } from "../../core/store.ts";

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

/** What `hostsPerTest` gives a `describe`. */
export interface HostsPerTest {
  /** The running test's data folder. */
  readonly data: { readonly path: string };
  /** The running test's folder for trees of files. */
  readonly tree: { readonly path: string };
  /** Opens a host on the data folder (see `openHost`) whose one provider, `scripted`, follows `script`; it is closed after the test. */
  open(
    script?: readonly ScriptedTurn[],
    options?: Omit<TestHostOptions, "providers">,
  ): Promise<{ host: Host; provider: ScriptedProvider }>;
  /** Opens a host as `open` does and creates a session on it in `location`, with model `m`. */
  startSession(
    location: string,
    script?: readonly ScriptedTurn[],
    options?: Omit<TestHostOptions, "providers">,
  ): Promise<{ host: Host; id: string; provider: ScriptedProvider }>;
  /** Closes `host` before the test ends, as a restart does. */
  close(host: Host): Promise<void>;
}

/**
 * Registers hooks on the current `describe`: each test gets a fresh data folder and a
 * fresh tree folder, and every host opened on them is closed after the test, before
 * both folders are removed.
 */
export function hostsPerTest(prefix: string): HostsPerTest {
  let folders: { data: ReturnType<typeof tempFolder>; tree: ReturnType<typeof tempFolder> } | undefined;
  const hosts: Host[] = [];

  beforeEach(() => {
    folders = { data: tempFolder(`${prefix}-data`), tree: tempFolder(`${prefix}-tree`) };
  });

  afterEach(async () => {
    for (const host of hosts.splice(0)) await host.close();
    folders?.data.remove();
    folders?.tree.remove();
    folders = undefined;
  });

  const running = () => {
    if (folders === undefined) throw new Error("the test folders exist only while a test runs");
    return folders;
  };
  const data = {
    get path() {
      return running().data.path;
    },
  };
  const tree = {
    get path() {
      return running().tree.path;
    },
  };
  async function open(script: readonly ScriptedTurn[] = [], options: Omit<TestHostOptions, "providers"> = {}) {
    const provider = scriptedProvider(script);
    const host = await openHost(data.path, { providers: { scripted: provider }, ...options });
    hosts.push(host);
    return { host, provider };
  }
  return {
    data,
    tree,
    open,
    async startSession(location, script, options) {
      const { host, provider } = await open(script, options);
      const id = await host.createSession({ location, provider: "scripted", model: "m" });
      return { host, id, provider };
    },
    async close(host) {
      const index = hosts.indexOf(host);
      if (index >= 0) hosts.splice(index, 1);
      await host.close();
    },
  };
}

/** A scripted reply that asks to read `file` with the `read` tool. */
export function readCall(file: string, callId = "call-1"): ScriptedTurn {
  return { text: `reading ${file}`, toolCalls: [{ id: callId, name: "read", input: { path: file } }] };
}

/** Prompts `text` and steps once; the request of that `replied` step. */
export async function turn(host: Host, id: string, text: string): Promise<ProviderRequest> {
  await host.prompt(id, text);
  return requestOf(await host.step(id));
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
