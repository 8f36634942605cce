// The crash trials against PostgreSQL (issue 16), declared by crash-postgres.test.ts (a
// few trials in `npm test`) and crash-postgres.long.test.ts (many, `npm run test:long`):
// the same worker, kills and checker as the SQLite trials, each database a fresh schema
// of the run's throwaway server. A kill lands while the worker's connections hold open
// transactions; the server rolls them back, and the next worker and the checker must find
// snapshot and messages agreeing and every admitted prompt stored once.

import { expect } from "chai";
import pg from "pg";
import { describeWithPostgres, type PostgresServer } from "../postgres-server.ts";
import { postgresDatabase } from "./databases.ts";
import { runCrashTrials } from "./trials.ts";

/** Declares the suite: `trials` killed workers, `lanes` at once. */
export function declarePostgresCrashTrials(options: { trials: number; lanes: number; timeoutMs: number }): void {
  describeWithPostgres("crash safety on PostgreSQL", (current) => declare(current, options));
}

function declare(current: () => PostgresServer, options: { trials: number; lanes: number; timeoutMs: number }): void {
  describe("crash safety on PostgreSQL (real processes, SIGKILL at random moments)", function () {
    this.timeout(options.timeoutMs);

    it(`keeps every invariant across ${options.trials} killed workers`, async () => {
      const outcome = await runCrashTrials({
        label: "postgres",
        trials: options.trials,
        lanes: options.lanes,
        trialsPerDatabase: 5,
        database: async (_dataDir, trial) => postgresDatabase(current().url, `crash_${process.pid}_${trial}`),
        drop: async (database) => {
          const schema = database.workerArgs[1] as string;
          const client = new pg.Client({ connectionString: current().url });
          await client.connect();
          try {
            await client.query(`DROP SCHEMA IF EXISTS ${pg.escapeIdentifier(schema)} CASCADE`);
          } finally {
            await client.end();
          }
        },
      });
      expect(outcome.violations).to.deep.equal([]);
      expect(outcome.trials).to.equal(options.trials);
      // The workers got somewhere: the trials checked boundaries, not empty databases.
      expect(outcome.steps).to.be.greaterThan(0);
    });
  });
}
