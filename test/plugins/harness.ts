// Test harness for the plugin host: real temp folders, real file writes, the real
// watcher and a real awilix container. Every host started here is closed, and every
// folder removed, after each test.

import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { asValue, createContainer } from "awilix";
import type { Clock, Logger } from "../../core/base/clock.ts";
import type { Diagnostic } from "../../core/base/diagnostics.ts";
import type { LoadTimings, PluginEvent } from "../../core/plugins/events.ts";
import { PluginSet, type PluginSetOptions } from "../../core/plugins/plugin-set.ts";
import { Registry } from "../../core/registry/registry.ts";
import * as SystemContext from "../../core/system-context.ts";

/** A started host with what a test observes of it. */
export interface RunningHost {
  readonly host: PluginSet;
  readonly registry: Registry;
  /** Every event after start, in order. */
  readonly events: PluginEvent[];
  /** The timings of each `activated` event in `events` (kept apart from the events), in order. */
  readonly timings: LoadTimings[];
  /** Messages plugins logged through `api.services.logger`. */
  readonly logged: string[];
  readonly location: string;
}

export interface StartOptions extends Partial<Omit<PluginSetOptions, "container" | "registry">> {
  readonly clock?: Clock;
  readonly location?: string;
}

/** Registers hooks on the current `describe` and returns the harness they clean up. */
export function usePluginHarness() {
  const folders: string[] = [];
  const hosts: PluginSet[] = [];

  afterEach(async () => {
    for (const host of hosts.splice(0)) await host.close();
    for (const folder of folders.splice(0)) fs.rmSync(folder, { recursive: true, force: true });
  });

  return {
    /** A fresh folder under the system's temp folder, outside the project. */
    tempFolder(prefix = "context-host-plugins-"): string {
      const folder = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), prefix)));
      folders.push(folder);
      return folder;
    },

    async start(options: StartOptions): Promise<RunningHost> {
      const logged: string[] = [];
      const logger: Logger = {
        info: (message) => logged.push(`info ${message}`),
        warn: (message) => logged.push(`warn ${message}`),
        error: (message) => logged.push(`error ${message}`),
      };
      const location = options.location ?? os.tmpdir();
      const container = createContainer();
      container.register({
        clock: asValue(options.clock ?? { now: () => Date.now() }),
        logger: asValue(logger),
        location: asValue(location),
      });
      const registry = new Registry();
      const host = await PluginSet.start({ debounceMs: 20, folders: [], ...options, registry, container });
      hosts.push(host);
      // Events as they came, an activation's timings (which vary run to run) kept apart.
      const events: PluginEvent[] = [];
      const timings: LoadTimings[] = [];
      host.subscribe((event) => {
        if (event.kind !== "activated") return events.push(event);
        const { timings: spent, ...rest } = event;
        timings.push(spent);
        events.push(rest as PluginEvent);
      });
      return { host, registry, events, timings, logged, location };
    },
  };
}

/** Writes a file in place, creating its folder. */
export function write(file: string, text: string): string {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text);
  return file;
}

let saves = 0;
/** Saves the way many editors do: write a temporary file beside it, then rename it over the file. */
export function saveByRename(file: string, text: string): void {
  const temporary = `${file}.${process.pid}-${++saves}.tmp`;
  fs.writeFileSync(temporary, text);
  fs.renameSync(temporary, file);
}

/** Polls until `probe` returns something truthy; fails after `timeoutMs` saying what it waited for. */
export async function eventually<T>(probe: () => T | Promise<T>, what: string, timeoutMs = 5000): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value) return value as NonNullable<T>;
      last = value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} (last: ${String(last)})`);
    await sleep(10);
  }
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** The Baseline System Context a first boundary would render from the registry now. */
export async function baselineOf(running: RunningHost): Promise<SystemContext.Generation> {
  return SystemContext.initialize(await running.registry.compose({ location: running.location }));
}

/** The active generation number of a plugin, or `undefined` when it is not active. */
export function generationOf(running: RunningHost, name: string): number | undefined {
  return running.host.plugins().find((plugin) => plugin.name === name)?.generation;
}

/** Diagnostics emitted so far that match every given field. */
export function diagnosticsLike(running: RunningHost, fields: Partial<Diagnostic>): Diagnostic[] {
  return running.host.diagnostics.filter((d) =>
    Object.entries(fields).every(([field, value]) => d[field as keyof Diagnostic] === value),
  );
}

/** The 1-based line of the first line of `code` containing `marker`. */
export function lineOf(code: string, marker: string): number {
  const index = code.split("\n").findIndex((line) => line.includes(marker));
  if (index < 0) throw new Error(`marker ${marker} not in the plugin code`);
  return index + 1;
}

/** Lines appended to a log file by plugins (their setups and disposers), or none yet. */
export function logLines(file: string): string[] {
  if (!fs.existsSync(file)) return [];
  return fs.readFileSync(file, "utf8").split("\n").filter(Boolean);
}

/**
 * The text of a plugin with one string-valued source `${name}/${source}` rendering
 * `${name}: ${value}`. `log`, when given, is a file the plugin appends `setup <tag>`
 * and `dispose <tag>` to. `setupDelayMs` makes setup slow.
 */
export function textPlugin(options: {
  name: string;
  value: string;
  source?: string;
  log?: string;
  tag?: string;
  setupDelayMs?: number;
}): string {
  const tag = JSON.stringify(options.tag ?? options.value);
  const log = options.log === undefined ? undefined : JSON.stringify(options.log);
  return `import { appendFileSync } from "node:fs";
import { definePlugin } from "context-host";
import Type from "typebox";

export default definePlugin({
  name: ${JSON.stringify(options.name)},
  async setup(api) {
    ${log === undefined ? "" : `appendFileSync(${log}, "setup " + ${tag} + "\\n");`}
    ${log === undefined ? "" : `api.onDispose(() => appendFileSync(${log}, "dispose " + ${tag} + "\\n"));`}
    ${options.setupDelayMs === undefined ? "" : `await new Promise((resolve) => setTimeout(resolve, ${options.setupDelayMs}));`}
    api.source({
      key: ${JSON.stringify(`${options.name}/${options.source ?? "status"}`)},
      schema: Type.String(),
      load: () => ${JSON.stringify(options.value)},
      baseline: (value) => ${JSON.stringify(`${options.name}: `)} + value,
      update: (_previous, value) => ${JSON.stringify(`${options.name} is now `)} + value,
    });
  },
});
`;
}
