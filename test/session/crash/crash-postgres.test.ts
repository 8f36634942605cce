// Crash trials against PostgreSQL, small: 3 killed workers one after the other on one
// schema (a check that the harness and the Postgres store keep the invariants, across a
// reopen after a kill). The full run: crash-postgres.long.test.ts.

import { declarePostgresCrashTrials } from "./postgres-trials.ts";

// Three, not two: a kill can land before a worker's first step (30-400 ms after it is ready),
// and the suite asserts that some trial got as far as one.
declarePostgresCrashTrials({ trials: 3, lanes: 1, timeoutMs: 30_000 });
