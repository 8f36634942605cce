// Test fixtures for the session runtime: temporary data folders, core Context Sources
// over mutable test state, and hosts on real SQLite files (no plugins, no watching),
// opened and closed per test by `hostsPerTest`.

import { mkdtempSync, realpathSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import Type from "typebox";
import {
  createHost,
  type Host,
  type HostOptions,
  type Provider,
  type ProviderRequest,
  type RequestMessage,
  type ScriptedProvider,
} from "../../core/index.ts";
import type { CoreSource } from "../../core/sources/core-source.ts";
import type { StoredMessage } from "../../core/store.ts";
import * as SystemContext from "../../core/system-context.ts";

/** A fresh temporary folder (real path); `remove` deletes it. */
export function tempFolder(prefix: string): { readonly path: string; remove(): void } {
  const folder = realpathSync(mkdtempSync(path.join(os.tmpdir(), `context-host-${prefix}-`)));
  return { path: folder, remove: () => rmSync(folder, { recursive: true, force: true }) };
}

/** What a test source's loader returns next. */
export type TestValue = SystemContext.Loaded<string>;

/** The mutable state behind a test source: its next value, its renderers' wording, and how often it loaded. */
export interface SourceState {
  value: TestValue;
  wording: string;
  loads: number;
}

/**
 * A core Context Source over mutable test state. Renders `<key> <wording> <value>` in
 * a Baseline, `<key> <wording> now <value>` in an update, and a removal text unless
 * it is not removable.
 */
export function testSource(
  key: string,
  initial: TestValue,
  options: { readonly isRemovable?: boolean } = {},
): { readonly state: SourceState; readonly core: CoreSource } {
  const state: SourceState = { value: initial, wording: "is", loads: 0 };
  const core: CoreSource = {
    key,
    load: () =>
      SystemContext.make({
        key,
        schema: Type.String(),
        load: () => {
          state.loads++;
          return state.value;
        },
        baseline: (current: string) => `${key} ${state.wording} ${current}`,
        update: (_previous: string, current: string) => `${key} ${state.wording} now ${current}`,
        ...(options.isRemovable === false ? {} : { removed: (previous: string) => `${key} (${previous}) no longer applies` }),
      }),
  };
  return { state, core };
}

/** A location-scoped core source: its loader reads the session's location at each boundary. */
export const locationSource: CoreSource = {
  key: "core/location",
  load: (env) =>
    SystemContext.make({
      key: "core/location",
      schema: Type.String(),
      load: () => env.location,
      baseline: (location: string) => `working folder: ${location}`,
      update: (_previous: string, location: string) => `working folder is now ${location}`,
    }),
};

/** A host on `dataDir` with only the given core sources (no built-ins), no plugins and no watching, unless the options say otherwise. */
export function openHost(
  dataDir: string,
  options: Omit<HostOptions, "dataDir" | "providers"> & { providers: HostOptions["providers"] },
): Promise<Host> {
  return createHost({ builtins: false, plugins: [], watch: false, systemPrompt: "You are a test agent.", ...options, dataDir });
}

/** What `hostsPerTest` gives a `describe`. */
export interface HostsPerTest {
  /** The running test's data folder; sessions usually start in it too. */
  readonly folder: { readonly path: string };
  /** Opens a host on the data folder (see `openHost`); it is closed after the test. */
  start(options: Parameters<typeof openHost>[1]): Promise<Host>;
  /**
   * Starts a host whose one provider, `scripted`, is `provider`, and creates a session on
   * it in the data folder with model `m`.
   */
  startSession(
    provider: Provider,
    options: Omit<Parameters<typeof openHost>[1], "providers">,
  ): Promise<{ host: Host; id: string }>;
  /** Closes `host` before the test ends, as a restart does. */
  stop(host: Host): Promise<void>;
  /** Another fresh folder (real path), removed after the test. */
  extraFolder(prefix: string): string;
}

/**
 * Registers hooks on the current `describe`: each test gets a fresh data folder, and
 * every host started on it is closed after the test, before the folders are removed.
 */
export function hostsPerTest(): HostsPerTest {
  let data: ReturnType<typeof tempFolder> | undefined;
  const extras: ReturnType<typeof tempFolder>[] = [];
  const hosts: Host[] = [];

  beforeEach(() => {
    data = tempFolder("session");
  });

  afterEach(async () => {
    for (const host of hosts.splice(0)) await host.close();
    for (const extra of extras.splice(0)) extra.remove();
    data?.remove();
    data = undefined;
  });

  const folder = {
    get path(): string {
      if (data === undefined) throw new Error("the data folder exists only while a test runs");
      return data.path;
    },
  };
  async function start(options: Parameters<typeof openHost>[1]): Promise<Host> {
    const host = await openHost(folder.path, options);
    hosts.push(host);
    return host;
  }
  return {
    folder,
    start,
    async startSession(provider, options) {
      const host = await start({ ...options, providers: { scripted: provider } });
      const id = await host.createSession({ location: folder.path, provider: "scripted", model: "m" });
      return { host, id };
    },
    async stop(host) {
      const index = hosts.indexOf(host);
      if (index >= 0) hosts.splice(index, 1);
      await host.close();
    },
    extraFolder(prefix) {
      const extra = tempFolder(prefix);
      extras.push(extra);
      return extra.path;
    },
  };
}

/** The request of a `replied` step; fails the test otherwise. */
export function requestOf(result: Awaited<ReturnType<Host["step"]>>): ProviderRequest {
  if (result.kind !== "replied") throw new Error(`expected a replied step, got ${JSON.stringify(result)}`);
  return result.request;
}

/** `role: text` of each message, for readable comparisons. */
export function transcript(messages: readonly (StoredMessage | RequestMessage)[]): string[] {
  return messages.map((m) => `${m.role}: ${"text" in m ? m.text : m.result}`);
}

/** The Mid-Conversation System Messages of durable history. */
export function systemUpdates(messages: readonly StoredMessage[]): StoredMessage[] {
  return messages.filter((m) => m.role === "system-update");
}

/** How many requests a provider has received so far. */
export function sent(provider: ScriptedProvider): number {
  return provider.requests.length;
}

/** Waits `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
