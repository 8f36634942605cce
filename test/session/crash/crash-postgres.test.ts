// Crash trials against PostgreSQL, small: 3 killed workers (a check that the harness and
// the Postgres store keep the invariants). The full run: crash-postgres.long.test.ts.

import { declarePostgresCrashTrials } from "./postgres-trials.ts";

declarePostgresCrashTrials({ trials: 3, lanes: 3, timeoutMs: 30_000 });
