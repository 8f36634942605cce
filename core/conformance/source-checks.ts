// Owns the conformance checks of one Context Source: what `context-host check` and
// `describePluginConformance` run against every source a plugin declares. Each check
// drives the source's own loader and renderers (with the values it loads, its
// `examples`, and values generated from its schema) and reports findings that say
// what is wrong and how to fix it. Values go through the host's own codec and arrival
// checks, so what the host would reject is found here first (decision 110). Nothing here
// is timed by the clock it watches: the deadline is the host's own (`withinDeadline`).

import { DeadlineExceeded, withinDeadline } from "../base/deadline.ts";
import { messageOf } from "../base/errors.ts";
import type { PluginSource } from "../plugins/define.ts";
import { pluginLimitDefaults } from "../plugins/limits.ts";
import type { SourceEnv } from "../registry/registry.ts";
import { absent, canonicalJson, type Json, toPlainJson, unavailable } from "../system-context/index.ts";
import { arrivalChecks } from "../system-context/prerendered.ts";
import { type Source, SourceCodec } from "../system-context/source.ts";
import { samplesOf } from "./arbitrary.ts";
import { type CheckHooks, type CheckStep, keepingAlive } from "./progress.ts";
import type { CheckName as RuleName } from "./rules.ts";

/** The checks of one source, by name, as findings print them. */
export type CheckName = Exclude<RuleName, "plugin-loads" | "import-side-effects" | "setup-repeats" | "dispose-releases">;

/** One thing a check found. An `error` fails `check`; a `warning` does not. */
export interface Finding {
  readonly check: CheckName;
  readonly severity: "error" | "warning";
  readonly key: string;
  /** What is wrong. */
  readonly message: string;
  /** How to fix it. */
  readonly fix: string;
  /** Where the plugin's code threw (line 1-based, column 0-based), when a finding is about an error it threw. */
  readonly location?: { readonly file: string; readonly line: number; readonly column: number; readonly lineText?: string };
}

/** A source as the checks see it: a plugin source (with its optional `examples`). */
export type CheckedSource = PluginSource;

/** How `checkSource` drives a source: its env, deadlines, the host's limits and generated inputs. */
export interface SourceCheckOptions {
  /** The env the loader is called with. */
  readonly env: SourceEnv;
  /** Loader deadline (the source's own `deadlineMs` wins). */
  readonly deadlineMs: number;
  /** Longest accepted rendering. */
  readonly maxTextLength: number;
  /** Largest accepted value, UTF-8 bytes of its JSON (default 1 MiB, the host's). */
  readonly maxValueBytes?: number;
  /** How long the renderers of one boundary may take (default 1000 ms, the host's). */
  readonly renderDeadlineMs?: number;
  /** How many loads to compare for volatile values (default 3). */
  readonly loads?: number;
  /** Generated values per check (default 20). */
  readonly samples?: number;
  /** Seed of the generated values (default 1). */
  readonly seed?: number;
}

// Taken when this module loads: a renderer's time is measured with the clock it cannot swap.
const now = performance.now.bind(performance);

function safely<T>(work: () => T): T | undefined {
  try {
    return work();
  } catch {
    return undefined;
  }
}

/** A short printable form of a value for a finding (JSON when it is, else its kind). */
function show(value: unknown): string {
  const text = safely(() => JSON.stringify(value, (_key, v: unknown) => (typeof v === "bigint" ? `${v}n` : v)));
  const shown = text ?? (value instanceof Date ? `Date(${value.getTime()})` : Object.prototype.toString.call(value));
  return shown.length > 120 ? `${shown.slice(0, 117)}...` : shown;
}

/** Whether two decoded values are the same value: by canonical JSON where both are JSON, else structurally. */
function sameValue(a: unknown, b: unknown, depth = 0): boolean {
  if (Object.is(a, b) || (typeof a === "number" && a === b)) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null || depth > 64) return false;
  if (Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) return false;
  if (a instanceof Date) return a.getTime() === (b as Date).getTime();
  if (a instanceof Map) {
    const other = b as Map<unknown, unknown>;
    return a.size === other.size && [...a].every(([k, v]) => other.has(k) && sameValue(v, other.get(k), depth + 1));
  }
  if (a instanceof Set) return a.size === (b as Set<unknown>).size && [...a].every((item) => (b as Set<unknown>).has(item));
  if (ArrayBuffer.isView(a)) return Buffer.compare(Buffer.from(a.buffer), Buffer.from((b as ArrayBufferView).buffer)) === 0;
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  return keys.every(
    (k) => Object.hasOwn(b, k) && sameValue((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k], depth + 1),
  );
}

/**
 * What the codec loses of `value` on the way to a snapshot and back, if anything: encoded as the
 * host encodes a loaded value, then decoded as the host decodes a stored one. A value the
 * host's encoding refuses is not a round trip's business (for a loaded value, `value-schema`'s).
 */
function roundTripLoss(codec: SourceCodec, value: unknown): string | undefined {
  const stored = safely(() => codec.plain(codec.encode(value)));
  if (stored === undefined) return undefined;
  const back = codec.decodeStored(stored);
  if (back === undefined) return `${show(value)} encodes to ${show(stored)}, which does not decode again under the schema`;
  if (!sameValue(back.value, value)) {
    const paths = safely(() => differingPaths(value, back.value)) ?? [];
    const at = paths.length === 0 ? "" : ` at ${paths.slice(0, 3).join(", ")}`;
    return `decode(encode(v)) differs from v${at}: ${show(value)} encodes to ${show(stored)} and decodes to ${show(back.value)}`;
  }
  return undefined;
}

type Renderer = "baseline" | "update" | "removed";

/** Paths where two JSON values differ (at most a few). */
function differingPaths(a: unknown, b: unknown, at = ""): string[] {
  if (canonicalJson(a as never) === canonicalJson(b as never)) return [];
  if (typeof a === "object" && a !== null && typeof b === "object" && b !== null && Array.isArray(a) === Array.isArray(b)) {
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
    return keys.flatMap((k) =>
      differingPaths((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k], `${at}/${k}`),
    );
  }
  return [at === "" ? "/" : at];
}

const same = (a: unknown, b: unknown) => {
  try {
    return canonicalJson(a as never) === canonicalJson(b as never);
  } catch {
    return false;
  }
};

/**
 * Calls `fn` with the clock and randomness watched: returns whether it read `Date.now`,
 * `new Date()`, `performance.now` or `Math.random`. Restored before returning, whatever
 * `fn` does.
 */
function watchingClock<T>(fn: () => T): { result: T; readsClock: boolean } {
  let readsClock = false;
  const RealDate = Date;
  const realNow = Date.now;
  const realRandom = Math.random;
  const realPerformanceNow = performance.now;
  const note = () => {
    readsClock = true;
  };
  const WatchedDate = function (this: unknown, ...args: unknown[]) {
    if (args.length === 0) note();
    return new.target === undefined
      ? (RealDate as unknown as () => string)()
      : new (RealDate as unknown as new (...a: unknown[]) => Date)(...args);
  } as unknown as DateConstructor;
  Object.setPrototypeOf(WatchedDate, RealDate);
  (WatchedDate as unknown as { prototype: object }).prototype = RealDate.prototype;
  WatchedDate.now = () => {
    note();
    return realNow();
  };
  try {
    globalThis.Date = WatchedDate;
    Math.random = () => {
      note();
      return realRandom();
    };
    performance.now = () => {
      note();
      return realPerformanceNow.call(performance);
    };
    return { result: fn(), readsClock };
  } finally {
    globalThis.Date = RealDate;
    Math.random = realRandom;
    performance.now = realPerformanceNow;
  }
}

/** Runs every check of `source`; findings in check order, each at most once per check. */
export function checkSource(source: CheckedSource, options: SourceCheckOptions): Promise<Finding[]> {
  return checkSourceWith(source, options, {});
}

/**
 * `checkSource` telling `hooks` each step and finding, and locating errors in the plugin's files.
 * @internal
 */
export function checkSourceWith(
  source: CheckedSource,
  options: SourceCheckOptions,
  hooks: CheckHooks<Finding>,
): Promise<Finding[]> {
  return keepingAlive(() => runSourceChecks(source, options, hooks));
}

async function runSourceChecks(source: CheckedSource, options: SourceCheckOptions, hooks: CheckHooks<Finding>) {
  const findings: Finding[] = [];
  const seen = new Set<string>();
  const { key } = source;
  const find = (check: CheckName, severity: Finding["severity"], message: string, fix: string, error?: unknown) => {
    if (seen.has(check)) return;
    seen.add(check);
    const location = error === undefined ? undefined : hooks.locate?.(error);
    const finding: Finding = { check, severity, key, message, fix, ...(location === undefined ? {} : { location }) };
    findings.push(finding);
    hooks.finding?.(finding);
  };
  const renderDeadlineMs = options.renderDeadlineMs ?? pluginLimitDefaults.renderDeadlineMs;
  const step = (kind: CheckStep["kind"], ms?: number) => hooks.step?.(ms === undefined ? { kind, key } : { kind, key, ms });
  const ownWork = () => hooks.step?.({ kind: "checks" });
  const deadlineMs = source.deadlineMs ?? options.deadlineMs;
  // The host's own codec of this source: strict encoding (nothing converted), plain JSON, decoding of stored values.
  const codec = new SourceCodec(source as unknown as Source, options.maxTextLength);
  const limits = {
    maxValueBytes: options.maxValueBytes ?? pluginLimitDefaults.maxValueBytes,
    maxDepth: pluginLimitDefaults.maxDepth,
  };

  // ── the loader ──────────────────────────────────────────────────────────
  const loaded: unknown[] = [];
  let sawAbsent = false;
  for (let i = 0; i < (options.loads ?? 3); i++) {
    let value: unknown;
    step("load", deadlineMs);
    try {
      value = await withinDeadline(() => source.load(options.env), deadlineMs, `loader ${key}`);
    } catch (error) {
      ownWork();
      find(
        "loader-settles",
        "error",
        error instanceof DeadlineExceeded
          ? `the loader missed its deadline of ${deadlineMs} ms: its promise did not settle (the host makes the source unavailable at every boundary)`
          : `the loader threw: ${messageOf(error)}`,
        `settle within ${deadlineMs} ms; return SystemContext.unavailable when the value cannot be observed now instead of throwing or hanging`,
        error,
      );
      break;
    }
    ownWork();
    if (value === unavailable) continue;
    if (value === absent) {
      sawAbsent = true;
      continue;
    }
    loaded.push(value);
  }

  // ── the loaded values, as the host takes them ───────────────────────────
  const admitted: unknown[] = [];
  const encoded: Json[] = [];
  for (const value of loaded) {
    step("value", renderDeadlineMs);
    try {
      encoded.push(arrivalChecks.value(key, codec.plain(codec.encode(value)), limits));
      admitted.push(value);
    } catch (error) {
      find(
        "value-schema",
        "error",
        `the host rejects the loaded value ${show(value)}: ${messageOf(error)}`,
        /larger than the limit|deeper than the limit/.test(messageOf(error))
          ? `keep the value within ${limits.maxValueBytes} bytes and 64 levels: leave out what the model need not be told`
          : `return values of the source's schema exactly (nothing is converted: 42 is not "42"), plain JSON once encoded`,
        error,
      );
    } finally {
      ownWork();
    }
  }
  for (let i = 1; i < encoded.length; i++) {
    const paths = differingPaths(encoded[0], encoded[i]);
    if (paths.length > 0) {
      find(
        "volatile-value",
        "warning",
        `the value changes between loads with nothing else changed, at ${paths.slice(0, 3).join(", ")}: every boundary would send an update and break the cached prefix`,
        "leave timestamps, counters and other per-load fields out of the value; keep only what the model should be told about",
      );
      break;
    }
  }
  if (sawAbsent && source.removed === undefined) {
    find(
      "removal-renderer",
      "warning",
      "the loader returned SystemContext.absent but the source has no removed renderer: an admitted value that disappears forces a new epoch",
      "add removed(previous) returning a text such as `<what> no longer applies`",
    );
  }

  // ── the codec: decode(encode(v)) equals v ───────────────────────────────
  // Generated values are of the schema's encoded form: decoded, they are values a loader may
  // return. Under a codec, a generated value that encodes is a candidate as it is, too.
  const generated = samplesOf(source.schema, options.samples ?? 20, options.seed ?? 1);
  const decoded: unknown[] = [];
  for (const sample of generated) {
    step("value", renderDeadlineMs);
    const back = safely(() => codec.decodeStored(toPlainJson(sample)));
    ownWork();
    if (back !== undefined) decoded.push(back.value);
  }
  const candidates = [...admitted, ...(source.examples ?? []), ...decoded, ...(codec.hasCodec ? generated : [])];
  for (const value of candidates) {
    step("value", renderDeadlineMs);
    const lost = roundTripLoss(codec, value);
    ownWork();
    if (lost !== undefined) {
      find(
        "round-trip",
        "error",
        lost,
        "make the schema's codec a lossless pair: decode(encode(v)) must equal v for every value encode accepts",
      );
      break;
    }
  }

  // ── the renderers ───────────────────────────────────────────────────────
  const values = [...admitted, ...(source.examples ?? []), ...decoded];
  const render = (renderer: Renderer, args: readonly unknown[]): string | undefined => {
    const fn = source[renderer] as ((...a: unknown[]) => unknown) | undefined;
    if (fn === undefined) return undefined;
    const before = args.map((arg) => safely(() => canonicalJson(arg as never)));
    let outcome: { result: unknown; readsClock: boolean };
    step(renderer, renderDeadlineMs);
    const startedAt = now();
    try {
      outcome = watchingClock(() => fn.apply(source, args as unknown[]));
    } catch (error) {
      find(
        "renderer-throws",
        "error",
        `${renderer} threw for ${show(args)}: ${messageOf(error)}`,
        `make ${renderer} total over every value of the schema`,
        error,
      );
      return undefined;
    } finally {
      ownWork();
    }
    const tookMs = now() - startedAt;
    if (tookMs > renderDeadlineMs) {
      find(
        "renderer-settles",
        "error",
        `${renderer} took ${Math.round(tookMs)} ms for ${show(args)}; the host gives the renderers of one boundary ${renderDeadlineMs} ms, then stops the plugin's worker`,
        `render from the value alone, without waiting or heavy work; do slow work in the loader`,
      );
    }
    if (outcome.readsClock) {
      find(
        "renderer-clock",
        "error",
        `${renderer} reads the clock or randomness`,
        "render from the value alone; observe time in the loader (as core/date does) so the value says what changed",
      );
    }
    args.forEach((arg, i) => {
      const after = safely(() => canonicalJson(arg as never));
      if (before[i] !== undefined && after !== before[i])
        find("renderer-mutates", "error", `${renderer} changed its input`, `treat the value ${renderer} gets as read-only`);
    });
    const text = outcome.result;
    const checked = arrivalChecks.text(key, renderer, text, options.maxTextLength);
    if (!checked.ok || checked.text.trim() === "") {
      find(
        "renderer-text",
        "error",
        checked.ok
          ? `${renderer} returned only white space for ${show(args)}`
          : `${renderer} ${checked.error.reason} for ${show(args)}`,
        typeof text === "string" && text.length > options.maxTextLength
          ? "say less, or split the source"
          : `return non-empty, well-formed text from ${renderer}`,
      );
      return undefined;
    }
    return checked.text;
  };
  const renderTwice = (renderer: Renderer, args: readonly unknown[]): string | undefined => {
    const first = render(renderer, args);
    const second = render(renderer, args);
    if (first !== undefined && second !== undefined && first !== second) {
      find(
        "renderer-pure",
        "error",
        `${renderer} gave two texts for the same input`,
        `render from the arguments alone, with no state kept between calls`,
      );
    }
    return first;
  };

  for (const value of values) {
    renderTwice("baseline", [structuredClone(value)]);
    if (source.removed !== undefined) renderTwice("removed", [structuredClone(value)]);
  }
  for (let i = 0; i + 2 < values.length; i++) {
    const [previous, one, two] = [values[i], values[i + 1], values[i + 2]];
    if (previous === undefined || one === undefined || two === undefined) break;
    if (same(one, two) || same(previous, one) || same(previous, two)) continue;
    const withOne = renderTwice("update", [structuredClone(previous), structuredClone(one)]);
    const withTwo = renderTwice("update", [structuredClone(previous), structuredClone(two)]);
    if (withOne !== undefined && withTwo !== undefined && withOne === withTwo) {
      find(
        "update-new-state",
        "error",
        `update gives the same text for two different new values (${JSON.stringify(one)} and ${JSON.stringify(two)})`,
        "say the newly effective state in the update: the new value, not only that something changed",
      );
    }
    // Two new values that differ in one field only: an update that leaves that field out
    // says nothing when only it changes.
    if (withOne !== undefined) {
      for (const variant of leafVariants(one, values, codec)) {
        const withVariant = render("update", [structuredClone(previous), structuredClone(variant.value)]);
        if (withVariant !== undefined && withVariant === withOne) {
          find(
            "update-new-state",
            "error",
            `update gives the same text for two new values that differ only at ${variant.path} (${JSON.stringify(one)} and ${JSON.stringify(variant.value)})`,
            `say every part of the newly effective state in the update, ${variant.path} included, or leave that field out of the value`,
          );
          break;
        }
      }
    }
    const previousBaseline = render("baseline", [structuredClone(previous)]);
    if (withOne !== undefined && previousBaseline !== undefined && withOne === previousBaseline) {
      find(
        "update-repeats-previous",
        "error",
        "update repeats the previous value's text instead of the new one",
        "render the current (second) argument of update",
      );
    }
  }
  return findings;
}

/** The paths of `value`'s leaves (primitives and arrays, each as a whole), at most `limit`. */
function leafPaths(value: unknown, limit: number, path: string[] = [], out: string[][] = []): string[][] {
  if (out.length >= limit) return out;
  if (value !== null && typeof value === "object" && !Array.isArray(value)) {
    for (const key of Object.keys(value)) leafPaths((value as Record<string, unknown>)[key], limit, [...path, key], out);
  } else if (path.length > 0) out.push(path);
  return out;
}

function at(value: unknown, path: readonly string[]): { readonly found: boolean; readonly value?: unknown } {
  let current = value;
  for (const key of path) {
    if (current === null || typeof current !== "object" || Array.isArray(current) || !Object.hasOwn(current, key)) {
      return { found: false };
    }
    current = (current as Record<string, unknown>)[key];
  }
  return { found: true, value: current };
}

/**
 * Copies of `value` with one leaf replaced by the same leaf of another of `donors`, for
 * each leaf where some donor differs — each still a value the host's encoding accepts.
 */
function leafVariants(
  value: unknown,
  donors: readonly unknown[],
  codec: SourceCodec,
): Array<{ readonly path: string; readonly value: unknown }> {
  const variants: Array<{ path: string; value: unknown }> = [];
  for (const path of leafPaths(value, 16)) {
    const own = at(value, path).value;
    for (const donor of donors) {
      const theirs = at(donor, path);
      if (!theirs.found || same(theirs.value, own)) continue;
      const variant = structuredClone(value) as Record<string, unknown>;
      let parent = variant;
      for (const key of path.slice(0, -1)) parent = parent[key] as Record<string, unknown>;
      parent[path[path.length - 1] as string] = structuredClone(theirs.value);
      if (safely(() => codec.encode(variant)) !== undefined) {
        variants.push({ path: `/${path.join("/")}`, value: variant });
        break;
      }
    }
  }
  return variants;
}
