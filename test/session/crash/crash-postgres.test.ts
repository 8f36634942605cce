// Crash trials against PostgreSQL, small: 2 killed workers one after the other on one
// schema (a check that the harness and the Postgres store keep the invariants, across a
// reopen after a kill). The full run: crash-postgres.long.test.ts.

import { declarePostgresCrashTrials } from "./postgres-trials.ts";

declarePostgresCrashTrials({ trials: 2, lanes: 1, timeoutMs: 30_000 });
