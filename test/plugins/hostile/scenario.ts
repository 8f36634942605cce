// The hostile-plugin scenario: a real host (createHost, a real SQLite file, real plugin
// folder, the scripted provider) serving two sessions while hostile plugins sit beside
// the well-behaved `good` plugin. `prepareScenario` lays the folders out (in the test
// process); `runScenario` runs the host and reports what it saw. Faults that would
// freeze, kill or corrupt a process hosting plugins in its own realm run `runScenario`
// in a child process (child.ts), so they cannot take the test run with them.
//
// Layout of a scenario's root folder:
//   plugins/       good.ts and the hostile fixture files
//   data/          the host's data folder (sessions.db)
//   a/, b/         the locations of sessions A and B
//   value.txt      the value of `good/status` (v1 in the first round, v2 in the second)
//   markers/<plugin>.log   lines hostile plugins append when their hostile code runs
//
// The flow: createHost; session A prompts and steps; session B is created, prompts and
// steps; value.txt becomes v2; optionally the hostile files are deleted (and the host
// waits until it no longer lists their plugins); A and B prompt and step again; close.

import { copyFileSync, mkdirSync, mkdtempSync, realpathSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createHost, type Diagnostic, type HostOptions, type PluginInfo, scriptedProvider } from "../../../core/index.ts";

/** What a scenario runs with; JSON, so a child process can take it from a file. */
export interface ScenarioConfig {
  readonly root: string;
  /** Hostile fixture file names (in this folder), copied into `plugins/`. */
  readonly hostile: readonly string[];
  /** Host options beyond the wiring: deadlines, `isolation`. */
  readonly options: Readonly<Record<string, unknown>>;
  /** Delete the hostile files after the first round and wait until their plugins are gone. */
  readonly removeHostile: boolean;
}

/** One host call as the scenario saw it. */
export interface CallRecord {
  readonly call: string;
  readonly ms: number;
  /** `replied`, `blocked`, `idle`, `in-flight`, `done` or `threw`. A call that never settles never reports. */
  readonly outcome: string;
  readonly error?: string;
  /** Of a replied step: the request's system texts. */
  readonly system?: readonly string[];
}

/** What `runScenario` reports. */
export interface ScenarioReport {
  readonly sessions: { readonly a?: string; readonly b?: string };
  readonly calls: readonly CallRecord[];
  readonly diagnostics: readonly Diagnostic[];
  /** Active plugins after the last round. */
  readonly plugins: readonly PluginInfo[];
  /** The hostile plugins had left the host's list after their files were deleted. */
  readonly removedInTime?: boolean;
}

export const fixtures = path.dirname(new URL(import.meta.url).pathname);

export const paths = (root: string) => ({
  plugins: path.join(root, "plugins"),
  data: path.join(root, "data"),
  a: path.join(root, "a"),
  b: path.join(root, "b"),
  value: path.join(root, "value.txt"),
  marker: (plugin: string) => path.join(root, "markers", `${plugin}.log`),
});

/** The plugin name of a fixture file: its base name. */
export const pluginName = (file: string) => path.basename(file, ".ts");

/** Lays out a scenario's folders in a fresh temp folder; `remove` deletes it. */
export function prepareScenario(
  hostile: readonly string[],
  settings: Partial<Omit<ScenarioConfig, "root" | "hostile">> = {},
): ScenarioConfig & { remove(): void } {
  const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), "context-host-hostile-")));
  const at = paths(root);
  for (const folder of [at.plugins, at.data, at.a, at.b, path.dirname(at.marker("x"))]) mkdirSync(folder, { recursive: true });
  for (const file of ["good.ts", ...hostile]) copyFileSync(path.join(fixtures, file), path.join(at.plugins, file));
  writeFileSync(at.value, "v1");
  return {
    root,
    hostile,
    options: settings.options ?? {},
    removeHostile: settings.removeHostile ?? false,
    remove: () => rmSync(root, { recursive: true, force: true }),
  };
}

// Taken before any plugin runs: a plugin in this realm may replace the global timers and clock.
const realSetTimeout = globalThis.setTimeout;
const now = performance.now.bind(performance);
/** How long the host is idle after start and between rounds. */
const idleMs = 50;
const pause = (ms: number) => new Promise((resolve) => realSetTimeout(resolve, ms));

/** Settles with what `work` did: its value or what it threw. */
export function settled<T>(work: Promise<T>): Promise<{ value: T } | { error: unknown }> {
  return work.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );
}

const messageOf = (error: unknown) => {
  try {
    return error instanceof Error ? error.message : String(error);
  } catch {
    return "(a value that cannot be printed)";
  }
};

/** Runs the scenario against a real host. Never throws: what went wrong is in the report. */
export async function runScenario(config: ScenarioConfig, progress: (line: string) => void = () => {}): Promise<ScenarioReport> {
  const at = paths(config.root);
  const calls: CallRecord[] = [];
  const provider = scriptedProvider();

  async function record<T>(call: string, work: () => Promise<T>, describe: (value: T) => Partial<CallRecord> = () => ({})) {
    progress(`start ${call}`);
    const started = now();
    // Waited for however long it takes: a call that never ends is the waiting test's failure.
    const result = await settled(Promise.resolve().then(work));
    const ms = Math.round(now() - started);
    progress(`end ${call}`);
    if ("error" in result) calls.push({ call, ms, outcome: "threw", error: messageOf(result.error) });
    else {
      calls.push({ call, ms, outcome: "done", ...describe(result.value) });
      return result.value;
    }
    return undefined;
  }

  const pluginSettings: Record<string, unknown> = { good: { valueFile: at.value } };
  for (const file of config.hostile) pluginSettings[pluginName(file)] = { marker: at.marker(pluginName(file)) };
  const host = await record("createHost", () =>
    createHost({
      dataDir: at.data,
      plugins: [at.plugins],
      providers: { scripted: provider },
      builtins: false,
      watch: config.removeHostile,
      debounceMs: 20,
      pluginSettings,
      // Deadlines and `isolation`: options the scenario passes through to createHost.
      ...(config.options as Partial<HostOptions>),
    }),
  );
  if (host === undefined) return { sessions: {}, calls, diagnostics: [], plugins: [] };
  // A real host is idle between boundaries: timers and rejections of plugins run then.
  await pause(idleMs);

  const sessions: { a?: string; b?: string } = {};
  const step = (name: "a" | "b", round: string) =>
    record(
      `step ${name} ${round}`,
      async () => {
        const id = sessions[name] as string;
        await host.prompt(id, `${round} prompt of ${name}`);
        return host.step(id);
      },
      (result) => ({ outcome: result.kind, ...(result.kind === "replied" ? { system: result.request.system } : {}) }),
    );

  sessions.a = await record("createSession a", () => host.createSession({ location: at.a, provider: "scripted", model: "m" }));
  if (sessions.a !== undefined) await step("a", "first");
  sessions.b = await record("createSession b", () => host.createSession({ location: at.b, provider: "scripted", model: "m" }));
  if (sessions.b !== undefined) await step("b", "first");

  await pause(idleMs);
  writeFileSync(at.value, "v2");
  let removedInTime: boolean | undefined;
  if (config.removeHostile) {
    for (const file of config.hostile) unlinkSync(path.join(at.plugins, file));
    const names = new Set(config.hostile.map(pluginName));
    const gone = await record("hostile plugins removed", async () => {
      while (host.plugins().some((plugin) => names.has(plugin.name))) await pause(10);
      return true;
    });
    removedInTime = gone === true;
  }
  if (sessions.a !== undefined) await step("a", "second");
  if (sessions.b !== undefined) await step("b", "second");

  const diagnostics = [...host.diagnostics];
  const plugins = host.plugins();
  await record("close", () => host.close());
  return { sessions, calls, diagnostics, plugins, ...(removedInTime === undefined ? {} : { removedInTime }) };
}
