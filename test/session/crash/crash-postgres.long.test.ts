// Crash trials against PostgreSQL, full size (`npm run test:long`): CONTEXT_HOST_CRASH_TRIALS
// [200] killed workers, two at once, five in turn on each schema.

import { declarePostgresCrashTrials } from "./postgres-trials.ts";

const trials = Number(process.env.CONTEXT_HOST_CRASH_TRIALS ?? 200);
declarePostgresCrashTrials({ trials, lanes: 2, timeoutMs: trials * 4000 });
