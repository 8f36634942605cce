// Owns the pre-rendered Context Source: a contained source whose loader, codec and
// renderers ran somewhere else (a plugin's worker), so its observation arrives as data —
// the encoded value and the texts — and is checked here on arrival, schema-free: plain
// JSON within a depth and a size, well-formed strings, non-empty texts within the limit.
// Sources that arrive together (one worker's) form a group, observed by one call.
// Pure like the rest of the System Context: what fetches the data is the caller's.

import { KeyInvalid, type Renderer, RenderFailed, ValueRejected } from "./errors.ts";
import { isSameJson, type Json, ValueNotPlainJson } from "./json.ts";
import { isKey, type Key, keyPattern } from "./key.ts";
import { Decoded, EntryMade, Rendered } from "./outcomes.ts";
import type { SnapshotEntry } from "./snapshot.ts";
import {
  type Containment,
  carry,
  type Observation,
  type ObservationGroup,
  type PackedSource,
  type Present,
  type Rendering,
  type SourceFault,
  type SystemContext,
} from "./source.ts";

/** A text a renderer produced elsewhere, or why it could not: `cause` is what the caller knows of the failure. */
export type RenderedText =
  | { readonly ok: true; readonly text: unknown }
  | { readonly ok: false; readonly reason: string; readonly cause?: unknown };

/** One observation made elsewhere, as it arrives (nothing in it is trusted yet). */
export type PrerenderedObservation =
  | { readonly kind: "unavailable" }
  | { readonly kind: "absent" }
  | {
      readonly kind: "present";
      /** The encoded value (what a snapshot stores). */
      readonly value: unknown;
      readonly baseline: RenderedText;
      /** The removal text, when the source is removable. */
      readonly removed?: RenderedText;
      /**
       * Against the `stored` value the observation was asked with, when there was one: whether
       * it decodes under the current schema and, if it differs from `value`, the update text.
       */
      readonly previous?: { readonly decodes: boolean; readonly update?: RenderedText };
    };

/** A pre-rendered source: a key and how to observe it given the admitted value. */
export interface PrerenderedSource {
  readonly key: Key;
  /** Observes once. A rejection counts as a load fault (the source is unavailable). */
  observe(stored: Json | undefined): Promise<PrerenderedObservation>;
}

/** Pre-rendered sources observed by one call for all of them (one plugin's worker answers them in one message). */
export interface PrerenderedGroup {
  /**
   * Observes the sources of `keys` once, each given the value admitted for it (`stored[i]`):
   * one observation per key, in order. A rejection counts as a load fault of each.
   */
  observe(keys: readonly Key[], stored: readonly (Json | undefined)[]): Promise<readonly PrerenderedObservation[]>;
}

/** The arrival checks of a pre-rendered source, besides `maxTextLength`. */
export interface PrerenderedLimits extends Containment, ValueLimits {}

/** The limits of an arriving value. */
export interface ValueLimits {
  /** Deepest accepted nesting of a value. */
  readonly maxDepth: number;
  /** Largest accepted value, in UTF-8 bytes of its JSON text (an upper bound of it). */
  readonly maxValueBytes: number;
}

const unavailableObservation: Observation = Object.freeze({ kind: "unavailable" });
const absentObservation: Observation = Object.freeze({ kind: "absent" });

/**
 * Closes a pre-rendered source into an opaque `SystemContext`. Like `contain`, it never
 * blocks initialization, and every fault (a rejected observation, a value that is not plain
 * JSON or too deep or too large, an unusable text) makes the source `unavailable` for that
 * observation and is reported through `limits.report`.
 */
export function prerendered(source: PrerenderedSource, limits: PrerenderedLimits): SystemContext {
  const one: PrerenderedGroup = { observe: async (_keys, stored) => [await source.observe(stored[0])] };
  return prerenderedGroup([source.key], one, limits)[0] as SystemContext;
}

/**
 * Closes pre-rendered sources observed together into one `SystemContext` per key, in the
 * order of `keys`: an operation observes those it composes by one call of `group`. Each is
 * checked on arrival as `prerendered` checks one.
 */
export function prerenderedGroup(keys: readonly Key[], group: PrerenderedGroup, limits: PrerenderedLimits): SystemContext[] {
  const report = (fault: SourceFault) => {
    try {
      limits.report(fault);
    } catch {
      // A failing reporter must not turn a contained fault into a host failure.
    }
  };
  const together = new ObservedTogether(group, report);
  return keys.map((key) => {
    if (!isKey(key)) throw new KeyInvalid({ key, reason: `expected "namespace/name" in lower case, matching ${keyPattern}` });
    const { maxTextLength, maxDepth, maxValueBytes } = limits;
    return carry([new GroupMember({ key, maxTextLength, maxDepth, maxValueBytes }, together, report)]);
  });
}

/** The observation group of pre-rendered sources: one call of the caller's group observes them, each checked on arrival. */
class ObservedTogether implements ObservationGroup {
  constructor(
    readonly group: PrerenderedGroup,
    readonly report: (fault: SourceFault) => void,
  ) {}

  async observe(sources: readonly PackedSource[], stored: readonly (Json | undefined)[]): Promise<readonly Observation[]> {
    const members = sources as readonly GroupMember[];
    // Loops, not callbacks: a closure made per call loses its optimized code at every full collection.
    const keys: Key[] = new Array(members.length);
    for (let i = 0; i < members.length; i++) keys[i] = (members[i] as GroupMember).key;
    const observations: Observation[] = new Array(members.length).fill(unavailableObservation);
    let arrived: readonly PrerenderedObservation[];
    try {
      arrived = await this.group.observe(keys, stored);
    } catch (error) {
      for (const key of keys) this.report({ key, phase: "load", error });
      return observations;
    }
    for (let i = 0; i < members.length; i++) observations[i] = (members[i] as GroupMember).arrive(arrived[i], stored[i]);
    return observations;
  }
}

/** One pre-rendered source of a group: what arrives for it is checked here. */
class GroupMember implements PackedSource {
  readonly blocksInitialization = false;
  /** The last observation, made again while the same arrival is for the same admitted value. */
  #last: PrerenderedValue | undefined;

  constructor(
    readonly checks: Checks,
    readonly group: ObservedTogether,
    readonly report: (fault: SourceFault) => void,
  ) {}

  get key(): Key {
    return this.checks.key;
  }

  async observe(stored?: Json): Promise<Observation> {
    const [observation] = await this.group.observe([this], [stored]);
    return observation ?? unavailableObservation;
  }

  onRenderFault = (error: RenderFailed) => this.report({ key: this.key, phase: error.renderer, error });

  /** What arrived for this source, asked with the admitted value `stored`, as an observation; a fault is reported and makes it unavailable. */
  arrive(arrived: PrerenderedObservation | undefined, stored: Json | undefined): Observation {
    const { key } = this;
    const kind = typeof arrived === "object" && arrived !== null ? arrived.kind : undefined;
    if (kind === "unavailable") return unavailableObservation;
    if (kind === "absent") return absentObservation;
    if (kind !== "present") {
      this.report({
        key,
        phase: "load",
        error: new ValueRejected({ key: key, path: "", reason: "the observation is not one a source can make" }),
      });
      return unavailableObservation;
    }
    const present = arrived as Extract<PrerenderedObservation, { kind: "present" }>;
    // The admitted value itself (the same object) was checked when the snapshot was read; the
    // same arrival for it makes the same observation (a boundary's unchanged sources allocate none).
    if (stored !== undefined && present.value === stored) {
      if (this.#last?.arrived !== present || this.#last.stored !== stored)
        this.#last = new PrerenderedValue(this.checks, stored, present, stored);
      return this.#last;
    }
    let value: Json;
    try {
      value = checkedValue(present.value, this.checks);
    } catch (error) {
      this.report({ key, phase: "value", error });
      return unavailableObservation;
    }
    return new PrerenderedValue(this.checks, value, present, stored);
  }
}

interface Checks {
  readonly key: Key;
  readonly maxTextLength: number;
  readonly maxDepth: number;
  readonly maxValueBytes: number;
}

class PrerenderedValue implements Present {
  readonly kind = "present";

  constructor(
    readonly checks: Checks,
    readonly value: Json,
    readonly arrived: Extract<PrerenderedObservation, { kind: "present" }>,
    /** The stored value the observation was asked with: the only one its update text is for. */
    readonly stored: Json | undefined,
  ) {}

  isSameAs(stored: Json): boolean {
    return stored === this.value || isSameJson(stored, this.value);
  }

  decodeStored(stored: Json): { readonly value: unknown } | undefined {
    // Decoding happened where the schema lives, for the value this observation was asked with.
    if (stored !== this.stored || this.arrived.previous?.decodes !== true) return undefined;
    return new Decoded(stored);
  }

  baseline(): Rendering {
    return checkedText(this.checks, "baseline", this.arrived.baseline);
  }

  update(previous: unknown): Rendering {
    const update = this.arrived.previous?.update;
    if (previous !== this.stored || update === undefined) {
      return {
        ok: false,
        error: new RenderFailed({ key: this.checks.key, renderer: "update", reason: "was not rendered for this previous value" }),
      };
    }
    return checkedText(this.checks, "update", update);
  }

  entry(): { readonly ok: true; readonly entry: SnapshotEntry } | { readonly ok: false; readonly error: RenderFailed } {
    const removed = this.arrived.removed;
    if (removed === undefined) return new EntryMade({ value: this.value });
    const rendering = checkedText(this.checks, "removed", removed);
    if (!rendering.ok) return rendering;
    return new EntryMade({ value: this.value, removed: rendering.text });
  }
}

const loneSurrogate = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Whether a string has no lone surrogate (it encodes as UTF-8 and back unchanged). */
function isWellFormed(text: string): boolean {
  return !loneSurrogate.test(text);
}

function checkedText(checks: Checks, renderer: Renderer, rendered: RenderedText | undefined): Rendering {
  const { key } = checks;
  if (typeof rendered !== "object" || rendered === null) {
    return { ok: false, error: new RenderFailed({ key: key, renderer: renderer, reason: "produced no rendering" }) };
  }
  if (!rendered.ok) {
    const reason = typeof rendered.reason === "string" ? rendered.reason : "failed";
    return { ok: false, error: new RenderFailed({ key: key, renderer: renderer, reason: reason, cause: rendered.cause }) };
  }
  const text = rendered.text;
  if (typeof text !== "string")
    return { ok: false, error: new RenderFailed({ key: key, renderer: renderer, reason: `returned ${typeof text}, not text` }) };
  if (text.length === 0)
    return { ok: false, error: new RenderFailed({ key: key, renderer: renderer, reason: "returned empty text" }) };
  if (text.length > checks.maxTextLength) {
    const reason = `returned ${text.length} characters, over the limit of ${checks.maxTextLength}`;
    return { ok: false, error: new RenderFailed({ key: key, renderer: renderer, reason: reason }) };
  }
  if (!isWellFormed(text))
    return {
      ok: false,
      error: new RenderFailed({ key: key, renderer: renderer, reason: "returned text with a lone surrogate" }),
    };
  return new Rendered(text);
}

/**
 * The arrival checks of a pre-rendered observation, as the host applies them, for whoever
 * must find their faults before the host does (`context-host check`): a value as owned plain
 * JSON within the depth and size limits (else `ValueRejected` naming the path), and a text
 * as a `Rendering` (non-empty, within the length limit, well-formed).
 * @internal
 */
export const arrivalChecks = {
  value: (key: Key, value: unknown, limits: ValueLimits): Json =>
    checkedValue(value, { key, maxTextLength: Number.POSITIVE_INFINITY, ...limits }),
  text: (key: Key, renderer: Renderer, text: unknown, maxTextLength: number): Rendering =>
    checkedText({ key, maxTextLength, maxDepth: 0, maxValueBytes: 0 }, renderer, { ok: true, text }),
};

/** The arrived value as owned plain JSON within the depth and size limits, or `ValueRejected` naming the path. */
function checkedValue(value: unknown, checks: Checks): Json {
  const budget = { left: checks.maxValueBytes };
  try {
    return walk(value, undefined, 0, checks, budget);
  } catch (error) {
    if (error instanceof ValueNotPlainJson) throw new ValueRejected({ key: checks.key, path: error.path, reason: error.reason });
    throw error;
  }
}

/** Where the walk is: the keys from the root, built into a JSON Pointer only for an error. */
interface Trail {
  readonly parent: Trail | undefined;
  readonly key: string | number;
}

function pointer(trail: Trail | undefined): string {
  let path = "";
  for (let at = trail; at !== undefined; at = at.parent)
    path = `/${String(at.key).replaceAll("~", "~0").replaceAll("/", "~1")}${path}`;
  return path;
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: counting the characters JSON escapes is the point
const needsEscape = /["\\\u0000-\u001f\u2028\u2029]/g;
// biome-ignore lint/suspicious/noControlCharactersInRegex: the ASCII range starts at U+0000
const nonAscii = /[^\u0000-\u007f]/;

/** An upper bound of the UTF-8 bytes of a string's JSON text, with its quotes and a comma. */
function jsonBytes(text: string): number {
  let bytes = text.length + 3;
  needsEscape.lastIndex = 0;
  if (needsEscape.test(text)) bytes += 5 * (text.match(needsEscape)?.length ?? 0);
  if (nonAscii.test(text)) {
    for (let i = 0; i < text.length; i++) {
      const code = text.charCodeAt(i);
      // Beyond the one byte counted: two more for most, one more for each half of a surrogate pair.
      if (code >= 0x80) bytes += code < 0x800 || (code >= 0xd800 && code <= 0xdfff) ? 1 : 2;
    }
  }
  return bytes;
}

function spend(budget: { left: number }, length: number, trail: Trail | undefined, checks: Checks) {
  budget.left -= length;
  if (budget.left < 0)
    throw new ValueNotPlainJson({
      path: pointer(trail),
      reason: `makes the value larger than the limit of ${checks.maxValueBytes} bytes`,
    });
}

function walk(value: unknown, trail: Trail | undefined, depth: number, checks: Checks, budget: { left: number }): Json {
  switch (typeof value) {
    case "string":
      if (!isWellFormed(value))
        throw new ValueNotPlainJson({ path: pointer(trail), reason: "is a string with a lone surrogate" });
      spend(budget, jsonBytes(value), trail, checks);
      return value;
    case "boolean":
      spend(budget, 6, trail, checks);
      return value;
    case "number":
      // The longest JSON number text (`-1.2345678901234567e-308`), and a comma.
      spend(budget, 25, trail, checks);
      if (!Number.isFinite(value))
        throw new ValueNotPlainJson({ path: pointer(trail), reason: `is ${value}, not a finite number` });
      return Object.is(value, -0) ? 0 : value;
    case "object": {
      if (value === null) {
        spend(budget, 5, trail, checks);
        return null;
      }
      if (depth >= checks.maxDepth)
        throw new ValueNotPlainJson({ path: pointer(trail), reason: `is nested deeper than the limit of ${checks.maxDepth}` });
      spend(budget, 3, trail, checks);
      if (Array.isArray(value)) {
        const copy: Json[] = new Array(value.length);
        for (let i = 0; i < value.length; i++) copy[i] = walk(value[i], { parent: trail, key: i }, depth + 1, checks, budget);
        return copy;
      }
      const proto = Object.getPrototypeOf(value);
      if (proto !== Object.prototype && proto !== null)
        throw new ValueNotPlainJson({ path: pointer(trail), reason: "is not a plain object" });
      const copy: { [key: string]: Json } = {};
      for (const key of Object.keys(value)) {
        if (key === "__proto__" || key === "constructor")
          throw new ValueNotPlainJson({ path: pointer({ parent: trail, key }), reason: `uses the forbidden key "${key}"` });
        if (!isWellFormed(key))
          throw new ValueNotPlainJson({ path: pointer({ parent: trail, key }), reason: "is a key with a lone surrogate" });
        spend(budget, jsonBytes(key) + 1, trail, checks);
        copy[key] = walk((value as Record<string, unknown>)[key], { parent: trail, key }, depth + 1, checks, budget);
      }
      return copy;
    }
    default:
      throw new ValueNotPlainJson({ path: pointer(trail), reason: `is ${typeof value}, not JSON` });
  }
}
