// Owns the conformance checks of one Context Source: what `context-host check` and
// `describePluginConformance` run against every source a plugin declares. Each check
// drives the source's own loader and renderers (with the values it loads, its
// `examples`, and values generated from its schema) and reports findings that say
// what is wrong and how to fix it. Nothing here is timed by the clock it watches: the
// deadline is the host's own (`withinDeadline`).

import { Value } from "typebox/value";
import { withinDeadline } from "../base/deadline.ts";
import { messageOf } from "../base/errors.ts";
import type { PluginSource } from "../plugins/define.ts";
import type { SourceEnv } from "../registry/registry.ts";
import { absent, canonicalJson, toPlainJson, unavailable, ValueNotPlainJson } from "../system-context/index.ts";
import { samplesOf } from "./arbitrary.ts";

/** The checks, by name, as findings print them. */
export type CheckName =
  | "loader-settles"
  | "value-schema"
  | "round-trip"
  | "volatile-value"
  | "removal-renderer"
  | "renderer-throws"
  | "renderer-text"
  | "renderer-pure"
  | "renderer-mutates"
  | "renderer-clock"
  | "update-new-state"
  | "update-repeats-previous";

/** One thing a check found. An `error` fails `check`; a `warning` does not. */
export interface Finding {
  readonly check: CheckName;
  readonly severity: "error" | "warning";
  readonly key: string;
  /** What is wrong. */
  readonly message: string;
  /** How to fix it. */
  readonly fix: string;
}

/** A source as the checks see it: a plugin source (with its optional `examples`). */
export type CheckedSource = PluginSource;

/** How `checkSource` drives a source: its env, deadline, text limit and generated inputs. */
export interface SourceCheckOptions {
  /** The env the loader is called with. */
  readonly env: SourceEnv;
  /** Loader deadline (the source's own `deadlineMs` wins). */
  readonly deadlineMs: number;
  /** Longest accepted rendering. */
  readonly maxTextLength: number;
  /** How many loads to compare for volatile values (default 3). */
  readonly loads?: number;
  /** Generated values per check (default 20). */
  readonly samples?: number;
  /** Seed of the generated values (default 1). */
  readonly seed?: number;
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
export async function checkSource(source: CheckedSource, options: SourceCheckOptions): Promise<Finding[]> {
  const findings: Finding[] = [];
  const seen = new Set<string>();
  const find = (check: CheckName, severity: Finding["severity"], message: string, fix: string) => {
    if (seen.has(check)) return;
    seen.add(check);
    findings.push({ check, severity, key: source.key, message, fix });
  };
  const deadlineMs = source.deadlineMs ?? options.deadlineMs;

  // ── the loader ──────────────────────────────────────────────────────────
  const loaded: unknown[] = [];
  let sawAbsent = false;
  for (let i = 0; i < (options.loads ?? 3); i++) {
    let value: unknown;
    try {
      value = await withinDeadline(() => source.load(options.env), deadlineMs, `loader ${source.key}`);
    } catch (error) {
      find(
        "loader-settles",
        "error",
        `the loader failed: ${messageOf(error)}`,
        `settle within ${deadlineMs} ms; return SystemContext.unavailable when the value cannot be observed now instead of throwing or hanging`,
      );
      break;
    }
    if (value === unavailable) continue;
    if (value === absent) {
      sawAbsent = true;
      continue;
    }
    loaded.push(value);
  }

  const encoded: unknown[] = [];
  for (const value of loaded) {
    let encodedValue: unknown;
    try {
      encodedValue = Value.Encode(source.schema, value);
    } catch (error) {
      find(
        "value-schema",
        "error",
        `a loaded value does not match the schema: ${messageOf(error)}`,
        "return values of the source's schema, or fix the schema",
      );
      continue;
    }
    if (!Value.Check(source.schema, encodedValue)) {
      const first = [...Value.Errors(source.schema, encodedValue)][0];
      find(
        "value-schema",
        "error",
        `a loaded value is rejected by the schema at ${first?.instancePath || "/"}: ${first?.message ?? "invalid"}`,
        "return values of the source's schema, or fix the schema",
      );
      continue;
    }
    try {
      toPlainJson(encodedValue);
    } catch (error) {
      if (!(error instanceof ValueNotPlainJson)) throw error;
      find(
        "value-schema",
        "error",
        `a loaded value is not plain JSON once encoded, at ${error.path || "/"}: ${error.reason}`,
        "return plain JSON (no Date, Map, class instances, NaN or cycles), or give the schema a codec that encodes to it",
      );
      continue;
    }
    encoded.push(encodedValue);
    try {
      const again = Value.Encode(source.schema, Value.Decode(source.schema, encodedValue));
      if (!same(again, encodedValue)) {
        find(
          "round-trip",
          "error",
          `encode → decode → encode changes the value at ${differingPaths(encodedValue, again).join(", ")}`,
          "make the schema's codec a lossless pair (decode(encode(v)) equals v)",
        );
      }
    } catch (error) {
      find(
        "round-trip",
        "error",
        `the encoded value does not decode again: ${messageOf(error)}`,
        "make the codec's decode accept what its encode produces",
      );
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

  // ── the renderers ───────────────────────────────────────────────────────
  const values = [...loaded, ...(source.examples ?? []), ...samplesOf(source.schema, options.samples ?? 20, options.seed ?? 1)];
  const render = (renderer: Renderer, args: readonly unknown[]): string | undefined => {
    const fn = source[renderer] as ((...a: unknown[]) => unknown) | undefined;
    if (fn === undefined) return undefined;
    const before = args.map((arg) => {
      try {
        return canonicalJson(arg as never);
      } catch {
        return undefined;
      }
    });
    let outcome: { result: unknown; readsClock: boolean };
    try {
      outcome = watchingClock(() => fn.apply(source, args as unknown[]));
    } catch (error) {
      find(
        "renderer-throws",
        "error",
        `${renderer} threw for ${JSON.stringify(args)}: ${messageOf(error)}`,
        `make ${renderer} total over every value of the schema`,
      );
      return undefined;
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
      try {
        if (before[i] !== undefined && canonicalJson(arg as never) !== before[i])
          find("renderer-mutates", "error", `${renderer} changed its input`, `treat the value ${renderer} gets as read-only`);
      } catch {
        find("renderer-mutates", "error", `${renderer} changed its input`, `treat the value ${renderer} gets as read-only`);
      }
    });
    const text = outcome.result;
    if (typeof text !== "string" || text.trim() === "") {
      find(
        "renderer-text",
        "error",
        `${renderer} returned ${typeof text === "string" ? "empty text" : typeof text}`,
        `return non-empty text from ${renderer}`,
      );
      return undefined;
    }
    if (text.length > options.maxTextLength) {
      find(
        "renderer-text",
        "error",
        `${renderer} returned ${text.length} characters, over the limit of ${options.maxTextLength}`,
        "say less, or split the source",
      );
      return undefined;
    }
    return text;
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
      for (const variant of leafVariants(one, values, source.schema)) {
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
 * each leaf where some donor differs — each still a value of `schema`.
 */
function leafVariants(
  value: unknown,
  donors: readonly unknown[],
  schema: PluginSource["schema"],
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
      let valid: boolean;
      try {
        valid = Value.Check(schema, Value.Encode(schema, variant));
      } catch {
        valid = false;
      }
      if (valid) {
        variants.push({ path: `/${path.join("/")}`, value: variant });
        break;
      }
    }
  }
  return variants;
}
