// What the hostile-plugin tests share: running a scenario in a child process that is
// killed when it hangs, and the assertions that a host kept serving and stored exactly
// what the well-behaved `good` plugin alone makes. See test/plugins/isolation.test.ts.

import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { expect } from "chai";
import type { Diagnostic } from "../../../core/index.ts";
import { SqliteSessionStore, sessionsFile } from "../../../core/session/store/sqlite.ts";
import { isUnderTsx, programArgs } from "../../support/compiled.ts";
import { paths, type ScenarioConfig, type ScenarioReport } from "./scenario.ts";

/** Deadlines small enough to keep the file fast, large enough for a loaded machine. */
export const deadlines = { deadlineMs: 400, setupDeadlineMs: 600, disposeDeadlineMs: 400 };
/** What a child under tsx (CONTEXT_HOST_TEST_TSX=1, see test/support/compiled.ts) spends starting, besides. */
const tsxStartMs = isUnderTsx ? 10_000 : 0;
/** A child that has not reported by then lost its host (stuck past every bound). */
export const killMs = 12_000 + tsxStartMs;
/** A child silent that long is frozen: no host call started or ended (each is bounded by a deadline well below). */
export const stallMs = 3500;
/**
 * `render` does one start-up and one Baseline: it ends well within this, even on a busy
 * machine (one run took 6.3 s at load ~10); a leaked handle would keep it alive past it.
 */
export const renderMs = 15_000 + tsxStartMs;
/** How long one host call may take inside a scenario before it counts as stuck. */
export const callBoundMs = 2500;
/** Text hostile plugins inject or rewrite; none of it may reach anything stored. */
export const foreignText = /INJECTED|REWRITTEN/;

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
  /** Kill the child after this long even if it keeps printing (default `killMs`). */
  readonly limitMs?: number;
  /** Kill the child once it prints nothing for this long (default `stallMs`). */
  readonly stallMs?: number;
}

export interface Ended {
  readonly code: number | null;
  readonly signal: string | null;
  /** Why the child was killed, if it was. */
  readonly killed: string | undefined;
  readonly stdout: string;
  readonly stderr: string;
  readonly ms: number;
}

/**
 * Runs Node on `args`; kills the child after `limitMs`, or once it printed something and
 * then nothing for `stallMs` (a scenario prints a line as each host call starts and ends,
 * so a frozen host falls silent). Resolves, never rejects.
 */
export function spawnBounded(args: readonly string[], cwd: string, limitMs: number, stallMs = limitMs): Promise<Ended> {
  return new Promise((resolve) => {
    const started = Date.now();
    const child: ChildProcess = spawn(process.execPath, args, { cwd, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    let killed: string | undefined;
    const kill = (why: string) => {
      killed = why;
      child.kill("SIGKILL");
    };
    const limit = setTimeout(() => kill(`still running after ${limitMs} ms`), limitMs);
    // Armed by the first line: starting Node and loading modules is no host call.
    let stall: NodeJS.Timeout | undefined;
    child.stdout?.on("data", (chunk: Buffer) => {
      stdout += chunk;
      clearTimeout(stall);
      stall = setTimeout(() => kill(`silent for ${stallMs} ms`), stallMs);
    });
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk;
    });
    child.on("close", (code, signal) => {
      clearTimeout(limit);
      clearTimeout(stall);
      resolve({ code, signal, killed, stdout, stderr, ms: Date.now() - started });
    });
  });
}

/** Runs a scenario in a child process; resolves (never rejects) once it reported, ended or was killed. */
export async function inChild(config: ScenarioConfig, options: ChildOptions): Promise<Run> {
  await Promise.resolve();
  const file = path.join(config.root, "config.json");
  writeFileSync(file, JSON.stringify(config));
  const child = programArgs("test/plugins/hostile/child.ts");
  const ended = await spawnBounded(
    [...(options.nodeFlags ?? []), ...child, file],
    config.root,
    options.limitMs ?? killMs,
    options.stallMs ?? stallMs,
  );
  const line = ended.stdout.split("\n").find((l) => l.startsWith("REPORT "));
  const report = line === undefined ? undefined : (JSON.parse(line.slice("REPORT ".length)) as ScenarioReport);
  const last = ended.stdout
    .split("\n")
    .filter((l) => l.startsWith("PROGRESS "))
    .at(-1)
    ?.slice("PROGRESS ".length);
  const how = ended.killed
    ? `was killed after ${ended.ms} ms (${ended.killed}; last: ${last ?? "nothing"})`
    : `ended after ${ended.ms} ms with code ${ended.code}${ended.signal === null ? "" : ` (signal ${ended.signal})`}`;
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
 * The host kept serving: every call settled in time and as expected, `good` was in each
 * session's Baseline, and what both sessions stored is exactly what `good` alone makes.
 */
export async function expectServed(run: Run): Promise<ScenarioReport> {
  const report = reportOf(run);
  const calls = report.calls.map((c) => `${c.call}: ${c.outcome}${c.error === undefined ? "" : ` (${c.error})`}`);
  expect(calls, `host calls (${run.ending})`).to.deep.equal(expectedCalls(run.config));
  const at = paths(run.config.root);
  for (const call of report.calls.filter((c) => c.call.startsWith("step "))) {
    const session = call.call.split(" ")[1] as "a" | "b";
    expect(call.system, call.call).to.deep.equal([`good: v1 @ ${at[session]}`]);
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
