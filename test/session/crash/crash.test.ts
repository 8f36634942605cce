// Crash safety with real processes on a real SQLite file (the harness: trials.ts; the
// invariants: check.ts; the same trials against PostgreSQL: crash-postgres.test.ts): a
// worker runs boundaries as fast as it can and is killed with SIGKILL at a random moment;
// the database is then reopened and checked.
//
// 4 trials in `npm test` (two lanes of two: a quick check that the harness and the invariants
// hold, a database reopened after a kill included); 500 when CONTEXT_HOST_LONG is set (`npm run test:long`).
// CONTEXT_HOST_CRASH_SEED fixes the seeds (the kill moments stay random); the one-line
// summary prints the seed used. A database with violations is kept and its path printed.

import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { expect } from "chai";
import { sessionsFile } from "../../../core/session/store/sqlite.ts";
import { type BaselineMemory, checkDatabase } from "./check.ts";
import { sqliteDatabase } from "./databases.ts";
import { marks } from "./protocol.ts";
import { openScenario } from "./scenario.ts";
import { runCrashTrials } from "./trials.ts";

const long = (process.env.CONTEXT_HOST_LONG ?? "") !== "" && process.env.CONTEXT_HOST_LONG !== "0";
const trials = long ? 500 : 4;

describe("crash safety (real processes, SIGKILL at random moments)", function () {
  this.timeout(long ? trials * 4000 : 60_000);

  it(`keeps every invariant across ${trials} killed workers`, async () => {
    const outcome = await runCrashTrials({
      label: "sqlite",
      trials,
      lanes: 2, // the machine has two cores
      trialsPerDatabase: 5,
      database: async (dataDir) => sqliteDatabase(dataDir),
    });
    expect(outcome.violations).to.deep.equal([]);
    expect(outcome.trials).to.equal(trials);
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
      expect(await checkDatabase(sqliteDatabase(source), clean, report)).to.deep.equal([]);

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
        return checkDatabase(sqliteDatabase(dir), memory, report);
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
        const row = db.prepare("SELECT epoch, key, entry FROM snapshot_entries ORDER BY epoch DESC, key LIMIT 1").get() as {
          epoch: number;
          key: string;
          entry: string;
        };
        const entry = { ...(JSON.parse(row.entry) as object), value: { pad: "tampered", v: -1 } };
        db.prepare("UPDATE snapshot_entries SET entry = ? WHERE epoch = ? AND key = ?").run(
          JSON.stringify(entry),
          row.epoch,
          row.key,
        );
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
