// Shared helpers for benches: timing, medians and the one-line JSON result format.
// Every bench prints lines of exactly this shape, one JSON object per line:
//   {"bench":NAME,"metric":M,"value":V,"unit":U,"baseline":B,"ratio":R}
// where B is the competing approach measured in the same run and R = V / B.

/** One result line of a bench. */
export interface BenchLine {
  readonly bench: string;
  readonly metric: string;
  readonly value: number;
  readonly unit: string;
  readonly baseline: number;
  readonly ratio: number;
}

/** The fields of a bench line before rounding and the ratio. */
export type BenchInput = Omit<BenchLine, "ratio">;

/** The exact, ordered field names of a bench line. */
export const lineFields = ["bench", "metric", "value", "unit", "baseline", "ratio"] as const;

/** Median of a non-empty list of numbers (mean of the middle two for an even count). */
export function median(values: readonly number[]): number {
  if (values.length === 0) throw new RangeError("median of no values");
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1 ? (sorted[middle] as number) : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

/** Rounds to `digits` significant digits (values and baselines). */
export function significant(value: number, digits = 3): number {
  return value === 0 ? 0 : Number(value.toPrecision(digits));
}

/**
 * Builds a bench line: value and baseline rounded to 3 significant digits, and the
 * ratio of the printed value to the printed baseline, to 4 significant digits (so a tiny
 * ratio such as a heap growth against a leak still reads as a number, not 0).
 */
export function benchLine(input: BenchInput): BenchLine {
  const value = significant(input.value);
  const baseline = significant(input.baseline);
  if (!Number.isFinite(value) || !Number.isFinite(baseline) || baseline <= 0) {
    throw new RangeError(`${input.bench}/${input.metric}: cannot compute a ratio of ${input.value} to ${input.baseline}`);
  }
  return { bench: input.bench, metric: input.metric, value, unit: input.unit, baseline, ratio: significant(value / baseline, 4) };
}

/** Whether a printed line is exactly one bench line: the six fields in order, numbers finite. */
export function isBenchLine(line: string): boolean {
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch {
    return false;
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) return false;
  const record = parsed as Record<string, unknown>;
  const keys = Object.keys(record);
  if (keys.length !== lineFields.length || !lineFields.every((field, i) => keys[i] === field)) return false;
  return (
    typeof record.bench === "string" &&
    typeof record.metric === "string" &&
    typeof record.unit === "string" &&
    Number.isFinite(record.value) &&
    Number.isFinite(record.baseline) &&
    Number.isFinite(record.ratio)
  );
}

/** Prints one bench line on stdout and returns it. */
export function emit(input: BenchInput): BenchLine {
  const line = benchLine(input);
  process.stdout.write(`${JSON.stringify(line)}\n`);
  return line;
}

/** Something to time: a synchronous function or one returning a promise. */
export type Timed = () => unknown;

export interface TimeOptions {
  /** Measured runs. */
  readonly runs: number;
  /** Unmeasured runs before them. */
  readonly warmup?: number;
  /** Called untimed before every run (warmup included) with the run's index, e.g. to change inputs. */
  readonly setup?: (run: number) => unknown;
  /**
   * Run a full garbage collection (when node runs with `--expose-gc`) untimed before every
   * call, so one function's garbage is not collected on another's clock. Default true.
   */
  readonly collect?: boolean;
}

/** Milliseconds taken by one call of `fn`, awaited when it returns a promise. */
export async function timeOnce(fn: Timed): Promise<number> {
  const start = process.hrtime.bigint();
  const result = fn();
  if (result instanceof Promise) await result;
  return Number(process.hrtime.bigint() - start) / 1e6;
}

/**
 * Median milliseconds of each function, measured interleaved: every run calls each
 * function once, and the order is reversed on every other run, so drift and noise on
 * a shared machine fall on all of them alike. Returns one median per function.
 */
export async function timeMedians(fns: readonly Timed[], options: TimeOptions): Promise<number[]> {
  const { runs, warmup = 0, setup, collect = true } = options;
  if (!(runs >= 1)) throw new RangeError(`runs must be at least 1, got ${runs}`);
  const samples = fns.map((): number[] => []);
  for (let run = 0; run < warmup + runs; run++) {
    if (setup !== undefined) await setup(run);
    const order = run % 2 === 0 ? fns.map((_, i) => i) : fns.map((_, i) => fns.length - 1 - i);
    for (const i of order) {
      if (collect) collectGarbage();
      const ms = await timeOnce(fns[i] as Timed);
      if (run >= warmup) (samples[i] as number[]).push(ms);
    }
  }
  return samples.map(median);
}

/** Median milliseconds of `fn` over `runs` runs after `warmup` unmeasured ones. */
export async function timeMedian(fn: Timed, options: TimeOptions): Promise<number> {
  return (await timeMedians([fn], options))[0] as number;
}

/** Runs a full garbage collection when node runs with `--expose-gc` (the bench runner passes it). */
export function collectGarbage(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

/** A non-negative integer from the environment (e.g. `BENCH_SIZE`), or `fallback` when unset. */
export function envInt(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0) throw new RangeError(`${name} must be a non-negative integer, got ${raw}`);
  return value;
}

/** A deterministic pseudo-random generator (mulberry32), so seeded runs see the same timeline. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
