// The crash-trial harness, for either store: a worker process runs boundaries as fast
// as it can on a real database and is killed with SIGKILL at a random moment (30–400 ms
// after it says it is running); the database is then reopened and checked (check.ts).
// Several trials run on each database in turn, so later workers restart on what earlier
// ones left, and Baselines are compared with earlier trials' reads. A summary line is
// printed; databases with violations are kept and named.

import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { programArgs } from "../../support/compiled.ts";
import { type BaselineMemory, checkDatabase, type WorkerReport } from "./check.ts";
import type { CrashDatabase } from "./databases.ts";
import { eventsFile, marks, random } from "./protocol.ts";

const root = path.resolve(import.meta.dirname, "../../..");

const killAfterMs = { min: 30, max: 400 };

interface Trial extends WorkerReport {
  /** The last commit the worker began and had not finished when it was killed. */
  readonly inFlight?: { readonly op: string; readonly revision: number };
  readonly steps: number;
}

/** Runs one worker until its random kill moment; rejects if it stops any other way. */
function runWorker(dataDir: string, database: CrashDatabase, seed: number, tag: string, killAt: number): Promise<Trial> {
  return new Promise((resolve, reject) => {
    // The worker's compiled twin (test/support/compiled.ts) starts in a fraction of tsx's time.
    const args = [...programArgs("test/session/crash/worker.ts"), dataDir, String(seed), tag, ...database.workerArgs];
    const child = spawn(process.execPath, args, { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    let ready = false;
    let timer: NodeJS.Timeout | undefined;
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      stdout += chunk;
      if (!ready && stdout.includes(`${marks.ready} `)) {
        ready = true;
        timer = setTimeout(() => child.kill("SIGKILL"), killAt);
      }
    });
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk;
    });
    child.on("error", reject);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      if (signal !== "SIGKILL" || !ready) {
        reject(new Error(`worker ${tag} stopped on its own (code ${code}, signal ${signal}):\n${stderr.slice(-2000)}`));
        return;
      }
      // Every event the worker wrote before the kill (stdout only carries READY). A line cut
      // short by the kill is not a report of anything.
      let log: string;
      try {
        log = readFileSync(eventsFile(dataDir, tag), "utf8");
      } catch (error) {
        reject(new Error(`worker ${tag} left no events file: ${error instanceof Error ? error.message : String(error)}`));
        return;
      }
      const lines = log.split("\n").slice(0, -1);
      const prompts: string[] = [];
      const sent: string[] = [];
      let inFlight: Trial["inFlight"];
      for (const line of lines) {
        const [mark, ...rest] = line.split(" ");
        if (mark === marks.prompt) prompts.push(rest.join(" "));
        else if (mark === marks.sent) sent.push(rest[0] as string);
        else if (mark === marks.commitStart) inFlight = { op: rest[0] as string, revision: Number(rest[1]) };
        else if (mark === marks.commitEnd) inFlight = undefined;
      }
      resolve({ prompts, sent, steps: sent.length, ...(inFlight === undefined ? {} : { inFlight }) });
    });
  });
}

export interface TrialsOptions {
  /** For the summary line: `sqlite`, `postgres`. */
  readonly label: string;
  readonly trials: number;
  /** Workers running at once, each on its own databases. */
  readonly lanes: number;
  /** Consecutive trials on one database before a lane starts a fresh one. */
  readonly trialsPerDatabase: number;
  /** A fresh database for the trials from `trial` on, with its data folder (session id file, locations). */
  database(dataDir: string, trial: number): Promise<CrashDatabase>;
  /** Drops a database the trials no longer need (kept when it has violations). */
  drop?(database: CrashDatabase): Promise<void>;
}

export interface TrialsOutcome {
  readonly violations: readonly string[];
  readonly trials: number;
  readonly steps: number;
  readonly prompts: number;
}

/** Runs the trials; resolves with every violation found (none: every invariant held). */
export async function runCrashTrials(options: TrialsOptions): Promise<TrialsOutcome> {
  const { trials, lanes, trialsPerDatabase } = options;
  const seed = Number(process.env.CONTEXT_HOST_CRASH_SEED ?? Date.now() % 1_000_000);
  const rng = random(seed);
  const base = mkdtempSync(path.join(os.tmpdir(), `context-host-crash-${options.label}-`));
  const violations: string[] = [];
  const kept = new Set<string>();
  const seen = new Set<string>();
  const databases: CrashDatabase[] = [];
  const tally = { trials: 0, steps: 0, prompts: 0, landed: 0, rolledBack: 0, between: 0 };
  const kills: number[] = Array.from({ length: trials }, () => killAfterMs.min + rng() * (killAfterMs.max - killAfterMs.min));

  async function revisionOf(database: CrashDatabase): Promise<number | undefined> {
    const rows = await database.rows();
    try {
      return (await rows.sessions())[0]?.revision;
    } finally {
      await rows.close();
    }
  }

  async function lane(index: number): Promise<void> {
    let memory: BaselineMemory = new Map();
    let dataDir = "";
    let database: CrashDatabase | undefined;
    for (let trial = index, n = 0; trial < trials; trial += lanes, n++) {
      if (database === undefined || n % trialsPerDatabase === 0) {
        dataDir = path.join(base, `db${trial}`);
        mkdirSync(dataDir);
        database = await options.database(dataDir, trial);
        databases.push(database);
        memory = new Map();
      }
      const where = `${database.name}, ${dataDir}`;
      let report: Trial;
      try {
        report = await runWorker(dataDir, database, seed * 1000 + trial, `t${trial}`, kills[trial] as number);
      } catch (error) {
        // The worker died of something else than the kill (e.g. it could not restart on what
        // the previous one left): a violation; the database is still checked.
        violations.push(`trial ${trial} (${where}): ${error instanceof Error ? error.message : String(error)}`);
        kept.add(where);
        report = { prompts: [], sent: [], steps: 0 };
      }
      tally.trials++;
      tally.steps += report.steps;
      tally.prompts += report.prompts.length;
      if (report.inFlight === undefined) tally.between++;
      else {
        const revision = await revisionOf(database);
        if (revision === report.inFlight.revision + 1) tally.landed++;
        else if (revision === report.inFlight.revision) tally.rolledBack++;
        else
          violations.push(
            `trial ${trial}: a ${report.inFlight.op} commit from revision ${report.inFlight.revision} left revision ${revision}`,
          );
      }
      // A broken state stays in the database: count it once, at the trial that left it.
      const found = (await checkDatabase(database, memory, report)).filter((violation) => !seen.has(`${where} ${violation}`));
      for (const violation of found) {
        seen.add(`${where} ${violation}`);
        violations.push(`trial ${trial} (${where}): ${violation}`);
      }
      if (found.length > 0) kept.add(where);
    }
  }

  await Promise.all(Array.from({ length: Math.min(lanes, trials) }, (_, i) => lane(i)));
  console.log(
    `      crash-safety (${options.label}): ${tally.trials} trials, ${violations.length} violations; kills inside a commit: ${tally.landed} landed + ${tally.rolledBack} rolled back, between commits: ${tally.between}; ${tally.steps} replied steps, ${tally.prompts} prompts; seed ${seed}`,
  );
  if (violations.length === 0) {
    rmSync(base, { recursive: true, force: true });
    for (const database of databases) await options.drop?.(database);
  } else {
    console.log(`      kept for inspection: ${[...kept].join("; ")}\n        ${violations.slice(0, 20).join("\n        ")}`);
  }
  return { violations, trials: tally.trials, steps: tally.steps, prompts: tally.prompts };
}
