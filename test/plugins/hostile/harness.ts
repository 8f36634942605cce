// What the hostile-plugin tests share: running a scenario in a child process that is
// killed when it hangs, and the assertions that a host kept serving and stored exactly
// what the well-behaved `good` plugin alone makes. See test/plugins/isolation.test.ts.

import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { expect } from "chai";
import type { Diagnostic } from "../../../core/index.ts";
import { SqliteSessionStore, sessionsFile } from "../../../core/session/store/sqlite.ts";
import { programArgs } from "../../support/compiled.ts";
import { paths, type ScenarioConfig, type ScenarioReport } from "./scenario.ts";

/**
 * Deadlines small enough to keep the file fast, large enough that the well-behaved `good`
 * plugin meets them on a loaded machine (a dozen workers starting beside other test files).
 */
export const deadlines = { deadlineMs: 1000, setupDeadlineMs: 1500, disposeDeadlineMs: 1000 };
/** Text hostile plugins inject or rewrite; none of it may reach anything stored. */
export const foreignText = /INJECTED|REWRITTEN/;

// No wall-clock bound here: how long a host call or a child takes says nothing about
// whether the host kept serving (a first start on a cold cache, on a busy machine, takes
// what it takes). A host that is lost shows as a call that never ends: the test that
// waits for it fails by its own timeout, and the child is stopped when the test file ends.

export interface Run {
  readonly config: ScenarioConfig;
  readonly report: ScenarioReport | undefined;
  /** How the run ended, for failure messages. */
  readonly ending: string;
}

export interface ChildOptions {
  /** Extra Node flags of the child (a heap limit, so a runaway allocation ends soon). */
  readonly nodeFlags?: readonly string[];
  readonly removeHostile?: boolean;
  /** Stops the child (SIGKILL) when aborted: the test file ended while it still ran. */
  readonly signal?: AbortSignal;
  /** Each line the child prints as a host call starts or ends (`start createHost`), as it comes. */
  readonly onProgress?: (line: string) => void;
}

export interface Ended {
  readonly code: number | null;
  readonly signal: string | null;
  /** Why the child was stopped, if it was. */
  readonly killed: string | undefined;
  readonly stdout: string;
  readonly stderr: string;
  readonly ms: number;
}

/**
 * Runs Node on `args` until it ends, or until `signal` aborts (then it is killed).
 * Resolves, never rejects. `onLine` hears each line of its stdout as it comes.
 */
export function spawnChild(
  args: readonly string[],
  cwd: string,
  options: { readonly signal?: AbortSignal; readonly onLine?: (line: string) => void } = {},
): Promise<Ended> {
  return new Promise((resolve) => {
    const started = Date.now();
    const child: ChildProcess = spawn(process.execPath, args, { cwd, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    let partial = "";
    let killed: string | undefined;
    const stop = () => {
      killed = "stopped: the test file ended while it still ran";
      child.kill("SIGKILL");
    };
    if (options.signal?.aborted) stop();
    else options.signal?.addEventListener("abort", stop, { once: true });
    child.stdout?.on("data", (chunk: Buffer) => {
      stdout += chunk;
      const lines = (partial + chunk).split("\n");
      partial = lines.pop() ?? "";
      for (const line of lines) options.onLine?.(line);
    });
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk;
    });
    child.on("close", (code, signal) => {
      options.signal?.removeEventListener("abort", stop);
      resolve({ code, signal, killed, stdout, stderr, ms: Date.now() - started });
    });
  });
}

/** Runs a scenario in a child process; resolves (never rejects) once it reported and ended, or was stopped. */
export async function inChild(config: ScenarioConfig, options: ChildOptions): Promise<Run> {
  await Promise.resolve();
  const file = path.join(config.root, "config.json");
  writeFileSync(file, JSON.stringify(config));
  const child = programArgs("test/plugins/hostile/child.ts");
  let last: string | undefined;
  const ended = await spawnChild([...(options.nodeFlags ?? []), ...child, file], config.root, {
    ...(options.signal === undefined ? {} : { signal: options.signal }),
    onLine: (line) => {
      if (!line.startsWith("PROGRESS ")) return;
      last = line.slice("PROGRESS ".length);
      options.onProgress?.(last);
    },
  });
  const line = ended.stdout.split("\n").find((l) => l.startsWith("REPORT "));
  const report = line === undefined ? undefined : (JSON.parse(line.slice("REPORT ".length)) as ScenarioReport);
  const how = ended.killed
    ? `was ${ended.killed} (last: ${last ?? "nothing"})`
    : `ended with code ${ended.code}${ended.signal === null ? "" : ` (signal ${ended.signal})`} (last: ${last ?? "nothing"})`;
  return { config, report, ending: `the host process ${how}; stderr: ${ended.stderr.trim().slice(-600) || "(none)"}` };
}

/** A bounded pool: at most `size` children at once. */
export function pool(size: number) {
  let running = 0;
  const waiting: Array<() => void> = [];
  return async <T>(work: () => Promise<T>): Promise<T> => {
    if (running >= size) await new Promise<void>((resolve) => waiting.push(resolve));
    running++;
    try {
      return await work();
    } finally {
      running--;
      waiting.shift()?.();
    }
  };
}

/** The steps every scenario makes, and how each must end. */
export function expectedCalls(config: ScenarioConfig): string[] {
  return [
    "createHost: done",
    "createSession a: done",
    "step a first: replied",
    "createSession b: done",
    "step b first: replied",
    ...(config.removeHostile ? ["hostile plugins removed: done"] : []),
    "step a second: replied",
    "step b second: replied",
    "close: done",
  ];
}

/** The report, or a failure saying how the host was lost. */
export function reportOf(run: Run): ScenarioReport {
  if (run.report === undefined) expect.fail(`no report: ${run.ending}`);
  return run.report;
}

/**
 * The host kept serving: every call settled, in order and as expected, `good` was in each
 * session's Baseline, and what both sessions stored is exactly what `good` alone makes.
 */
export async function expectServed(run: Run): Promise<ScenarioReport> {
  const report = reportOf(run);
  const calls = report.calls.map((c) => `${c.call}: ${c.outcome}${c.error === undefined ? "" : ` (${c.error})`}`);
  expect(calls, `host calls (${run.ending})`).to.deep.equal(expectedCalls(run.config));
  const at = paths(run.config.root);
  for (const call of report.calls.filter((c) => c.call.startsWith("step "))) {
    const session = call.call.split(" ")[1] as "a" | "b";
    expect(call.system, `${call.call}; diagnostics: ${printed(report)}`).to.deep.equal([`good: v1 @ ${at[session]}`]);
  }
  await expectStored(run.config, report);
  return report;
}

/** What `good` alone makes a session store, in the order the scenario steps. */
export function expectedStore(location: string, name: "a" | "b") {
  const [first, second] = name === "a" ? [1, 3] : [2, 4];
  return {
    baseline: `good: v1 @ ${location}`,
    systemPrompt: null,
    snapshot: { "good/status": { value: `v2 @ ${location}` } },
    transcript: [
      `user: first prompt of ${name}`,
      `assistant: reply ${first}: first prompt of ${name}`,
      `user: second prompt of ${name}`,
      `system-update: good is now v2 @ ${location}`,
      `assistant: reply ${second}: second prompt of ${name}`,
    ],
  };
}

/** Reads both sessions back from the SQLite file in this process and compares them with what `good` alone stores. */
export async function expectStored(config: ScenarioConfig, report: ScenarioReport): Promise<void> {
  const at = paths(config.root);
  const file = sessionsFile(at.data);
  for (const suffix of ["", "-wal"]) {
    if (!existsSync(file + suffix)) continue;
    const raw = readFileSync(file + suffix, "latin1");
    expect(foreignText.exec(raw)?.[0], `text injected into ${path.basename(file + suffix)}`).to.equal(undefined);
  }
  const store = new SqliteSessionStore(file);
  try {
    for (const name of ["a", "b"] as const) {
      const id = report.sessions[name];
      expect(id, `session ${name} was created`).to.be.a("string");
      const epoch = await store.activeEpoch(id as string);
      const messages = await store.messages(id as string);
      expect(
        {
          baseline: epoch?.baseline,
          systemPrompt: epoch?.systemPrompt,
          snapshot: epoch?.snapshot,
          transcript: messages.map((m) => `${m.role}: ${m.text}`),
        },
        `what session ${name} stored`,
      ).to.deep.equal(expectedStore(at[name], name));
    }
  } finally {
    await store.close();
  }
}

/** Lines the hostile plugin appended to its marker file. */
export function markerOf(config: ScenarioConfig, plugin: string): string[] {
  const file = paths(config.root).marker(plugin);
  return existsSync(file) ? readFileSync(file, "utf8").split("\n").filter(Boolean) : [];
}

export function diagnosticsOf(report: ScenarioReport, fields: Partial<Diagnostic>): Diagnostic[] {
  return report.diagnostics.filter((d) =>
    Object.entries(fields).every(([field, value]) => d[field as keyof Diagnostic] === value),
  );
}

export const printed = (report: ScenarioReport) => JSON.stringify(report.diagnostics, null, 1);
