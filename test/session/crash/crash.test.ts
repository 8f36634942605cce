// Crash safety with real processes: a worker runs boundaries as fast as it can on a real
// SQLite file and is killed with SIGKILL at a random moment (30–400 ms after it says it
// is running); the database is then reopened and checked (see check.ts for the
// invariants). Several trials run on each database in turn, so later workers restart on
// what earlier ones left, and Baselines are compared with earlier trials' reads.
//
// 6 trials in `npm test` (a quick check that the harness and the invariants hold); 500 when CONTEXT_HOST_LONG is set (`npm run test:long`).
// CONTEXT_HOST_CRASH_SEED fixes the seeds (the kill moments stay random); the one-line
// summary prints the seed used. A database with violations is kept and its path printed.

import { spawn } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { expect } from "chai";
import { sessionsFile } from "../../../core/session/store/sqlite.ts";
import { type BaselineMemory, checkDatabase, type WorkerReport } from "./check.ts";
import { marks, random } from "./protocol.ts";
import { openScenario } from "./scenario.ts";

const root = path.resolve(import.meta.dirname, "../../..");
const worker = path.join(import.meta.dirname, "worker.ts");

const long = (process.env.CONTEXT_HOST_LONG ?? "") !== "" && process.env.CONTEXT_HOST_LONG !== "0";
const trials = long ? 500 : 6;
/** Workers running at once, each on its own databases (the machine has two cores). */
const lanes = 2;
/** Consecutive trials on one database before a lane starts a fresh one. */
const trialsPerDatabase = 5;
const killAfterMs = { min: 30, max: 400 };
/**
 * Packages the worker would otherwise load through tsx's loader hooks, one file at a time
 * (typebox is some 700 files): loaded natively first, they are the same modules (same
 * URLs) at half the start-up cost, which is most of a trial's time.
 */
const preload = ["typebox", "typebox/compile", "typebox/value", "awilix"].flatMap((name) => ["--import", name]);

interface Trial extends WorkerReport {
  /** The last commit the worker began and had not finished when it was killed. */
  readonly inFlight?: { readonly op: string; readonly revision: number };
  readonly steps: number;
}

/** Runs one worker until its random kill moment; rejects if it stops any other way. */
function runWorker(dataDir: string, seed: number, tag: string, killAt: number): Promise<Trial> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...preload, "--import", "tsx", worker, dataDir, String(seed), tag], {
      cwd: root,
      stdio: ["ignore", "pipe", "pipe"],
    });
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
      // A line cut short by the kill is not a report of anything.
      const lines = stdout.split("\n").slice(0, -1);
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

/** The revision of the database's only session (a commit in flight claimed `revision + 1` if it landed). */
function revisionOf(file: string): number | undefined {
  const db = new Database(file, { readonly: true });
  try {
    const row = db.prepare("SELECT revision FROM sessions").get() as { revision: number } | undefined;
    return row?.revision;
  } finally {
    db.close();
  }
}

describe("crash safety (real processes, SIGKILL at random moments)", function () {
  this.timeout(long ? trials * 4000 : 60_000);

  it(`keeps every invariant across ${trials} killed workers`, async () => {
    const seed = Number(process.env.CONTEXT_HOST_CRASH_SEED ?? Date.now() % 1_000_000);
    const rng = random(seed);
    const base = mkdtempSync(path.join(os.tmpdir(), "context-host-crash-"));
    const violations: string[] = [];
    const kept = new Set<string>();
    const seen = new Set<string>();
    const tally = { trials: 0, steps: 0, prompts: 0, landed: 0, rolledBack: 0, between: 0 };
    const kills: number[] = Array.from({ length: trials }, () => killAfterMs.min + rng() * (killAfterMs.max - killAfterMs.min));

    async function lane(index: number): Promise<void> {
      let memory: BaselineMemory = new Map();
      let dataDir = "";
      for (let trial = index, n = 0; trial < trials; trial += lanes, n++) {
        if (n % trialsPerDatabase === 0) {
          dataDir = path.join(base, `db${trial}`);
          mkdirSync(dataDir);
          memory = new Map();
        }
        const file = sessionsFile(dataDir);
        let report: Trial;
        try {
          report = await runWorker(dataDir, seed * 1000 + trial, `t${trial}`, kills[trial] as number);
        } catch (error) {
          // The worker died of something else than the kill (e.g. it could not restart on what
          // the previous one left): a violation; the database is still checked.
          violations.push(`trial ${trial} (${dataDir}): ${error instanceof Error ? error.message : String(error)}`);
          kept.add(dataDir);
          report = { prompts: [], sent: [], steps: 0 };
        }
        tally.trials++;
        tally.steps += report.steps;
        tally.prompts += report.prompts.length;
        if (report.inFlight === undefined) tally.between++;
        else {
          const revision = revisionOf(file);
          if (revision === report.inFlight.revision + 1) tally.landed++;
          else if (revision === report.inFlight.revision) tally.rolledBack++;
          else
            violations.push(
              `trial ${trial}: a ${report.inFlight.op} commit from revision ${report.inFlight.revision} left revision ${revision}`,
            );
        }
        // A broken state stays in the database: count it once, at the trial that left it.
        const found = (await checkDatabase(file, memory, report)).filter((violation) => !seen.has(`${dataDir} ${violation}`));
        for (const violation of found) {
          seen.add(`${dataDir} ${violation}`);
          violations.push(`trial ${trial} (${dataDir}): ${violation}`);
        }
        if (found.length > 0) kept.add(dataDir);
      }
    }

    await Promise.all(Array.from({ length: lanes }, (_, i) => lane(i)));
    console.log(
      `      crash-safety: ${tally.trials} trials, ${violations.length} violations; kills inside a commit: ${tally.landed} landed + ${tally.rolledBack} rolled back, between commits: ${tally.between}; ${tally.steps} replied steps, ${tally.prompts} prompts; seed ${seed}`,
    );
    if (violations.length === 0) rmSync(base, { recursive: true, force: true });
    else console.log(`      kept for inspection: ${[...kept].join(", ")}\n        ${violations.slice(0, 20).join("\n        ")}`);
    expect(violations).to.deep.equal([]);
    expect(tally.trials).to.equal(trials);
  });
});

describe("crash checker", function () {
  this.timeout(20_000);

  // The checker must fail on exactly the states a broken commit would leave behind. A
  // consistent database from the same scenario, in-process, is tampered with one way
  // per case, on a fresh copy each time.
  it("reports a message without its snapshot advance (and the reverse), a double admission, a lost prompt and a changed Baseline", async () => {
    const base = mkdtempSync(path.join(os.tmpdir(), "context-host-checker-"));
    try {
      const source = path.join(base, "source");
      mkdirSync(source);
      const prompts: string[] = [];
      const sent: string[] = [];
      const scenario = await openScenario({
        dataDir: source,
        seed: 7,
        tag: "checker",
        say: (line) => {
          const [mark, ...rest] = line.split(" ");
          if (mark === marks.prompt) prompts.push(rest.join(" "));
          if (mark === marks.sent) sent.push(rest[0] as string);
        },
      });
      for (let i = 0; i < 80; i++) await scenario.iterate();
      await scenario.host.close();
      const report = { prompts, sent };

      const clean: BaselineMemory = new Map();
      expect(await checkDatabase(sessionsFile(source), clean, report)).to.deep.equal([]);

      let copies = 0;
      async function tampered(sql: (db: Database.Database) => void, memory: BaselineMemory = new Map()): Promise<string[]> {
        const dir = path.join(base, `copy${copies++}`);
        mkdirSync(dir);
        for (const suffix of ["", "-wal"]) {
          if (existsSync(sessionsFile(source) + suffix)) copyFileSync(sessionsFile(source) + suffix, sessionsFile(dir) + suffix);
        }
        const db = new Database(sessionsFile(dir));
        try {
          sql(db);
        } finally {
          db.close();
        }
        return checkDatabase(sessionsFile(dir), memory, report);
      }
      const last = (db: Database.Database) =>
        db.prepare("SELECT MAX(seq) AS seq, MAX(epoch) AS epoch FROM messages").get() as { seq: number; epoch: number };
      const insert = (db: Database.Database, role: string, text: string) => {
        const { seq, epoch } = last(db);
        db.prepare("INSERT INTO messages (session_id, seq, role, text, epoch) SELECT id, ?, ?, ?, ? FROM sessions").run(
          seq + 1,
          role,
          text,
          epoch,
        );
      };
      const joined = (violations: string[]) => violations.join("\n");

      // A Mid-Conversation System Message committed without its snapshot advance.
      expect(joined(await tampered((db) => insert(db, "system-update", 'SET crash/s1 {"pad":"tampered","v":-1}')))).to.match(
        /snapshot and messages disagree on crash\/s1/,
      );
      // A snapshot advance committed without its message.
      const advanced = await tampered((db) => {
        const epoch = db.prepare("SELECT number, snapshot FROM epochs ORDER BY number DESC LIMIT 1").get() as {
          number: number;
          snapshot: string;
        };
        const snapshot = JSON.parse(epoch.snapshot) as Record<string, { value: unknown }>;
        const key = Object.keys(snapshot)[0] as string;
        snapshot[key] = { ...snapshot[key], value: { pad: "tampered", v: -1 } };
        db.prepare("UPDATE epochs SET snapshot = ? WHERE number = ?").run(JSON.stringify(snapshot), epoch.number);
      });
      expect(joined(advanced)).to.match(/snapshot and messages disagree/);
      // The same change admitted twice.
      const twice = await tampered((db) => {
        const { epoch } = last(db);
        const update = db
          .prepare("SELECT text FROM messages WHERE role = 'system-update' AND epoch = ? ORDER BY seq DESC LIMIT 1")
          .get(epoch) as { text: string } | undefined;
        expect(update, "the scenario admitted a Mid-Conversation System Message in its last epoch").to.not.equal(undefined);
        insert(db, "system-update", update?.text ?? "");
      });
      expect(joined(twice)).to.match(/admitted twice|which is not in effect/);
      // A prompt promoted twice, and a promotion whose prompt row was not marked.
      const promoted = (db: Database.Database) =>
        db.prepare("SELECT text, promoted_seq FROM pending_prompts WHERE promoted_seq IS NOT NULL LIMIT 1").get() as {
          text: string;
          promoted_seq: number;
        };
      expect(joined(await tampered((db) => insert(db, "user", promoted(db).text)))).to.match(/admitted twice/);
      expect(
        joined(
          await tampered((db) =>
            db.prepare("UPDATE pending_prompts SET promoted_seq = NULL WHERE promoted_seq = ?").run(promoted(db).promoted_seq),
          ),
        ),
      ).to.match(/has no promoted prompt/);
      // An admitted prompt lost.
      expect(
        joined(await tampered((db) => db.prepare("DELETE FROM pending_prompts WHERE text = ?").run(prompts.at(-1)))),
      ).to.match(/stored 0 times/);
      // The Baseline of an epoch rewritten since an earlier check, and a request whose Baseline no epoch has.
      const rewritten = await tampered(
        (db) => db.prepare("UPDATE epochs SET baseline = baseline || ' ' WHERE number = 1").run(),
        new Map(clean),
      );
      expect(joined(rewritten)).to.match(/the Baseline of epoch 1 changed since an earlier check/);
      expect(joined(rewritten)).to.match(/a request was sent with a Baseline no stored epoch has|unparseable|not canonical/);
    } finally {
      rmSync(base, { recursive: true, force: true });
    }
  });
});
