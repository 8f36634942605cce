// Owns the Context Source and the opaque SystemContext carrier. `make` closes a
// typed source over its value type, so sources of different types compose alike;
// `combine` concatenates carriers in caller order and rejects repeated keys.

import type { StaticDecode, TSchema } from "typebox";
import type { Validator } from "typebox/compile";
import { Compile } from "typebox/compile";
import { Check, DecodeUnsafe, EncodeUnsafe, Errors, HasCodec } from "typebox/value";
import { DuplicateKeyError, KeyInvalid, type Renderer, RenderFailed, ValueRejected } from "./errors.ts";
import { isSameJson, type Json, toPlainJson, ValueNotPlainJson } from "./json.ts";
import { isKey, type Key, keyPattern } from "./key.ts";
import { Decoded, EntryMade, Rendered } from "./outcomes.ts";
import type { SnapshotEntry } from "./snapshot.ts";

declare const unavailableBrand: unique symbol;
declare const absentBrand: unique symbol;
/** The type of `unavailable`. A branded symbol, so it survives destructuring and re-export. */
export type Unavailable = symbol & { readonly [unavailableBrand]: true };
/** The type of `absent`. */
export type Absent = symbol & { readonly [absentBrand]: true };

/** Loader result: the source could not be observed right now (stale-while-revalidate). */
export const unavailable = Symbol.for("context-host/unavailable") as Unavailable;
/** Loader result: the source was observed, and there is nothing (a removal once admitted). */
export const absent = Symbol.for("context-host/absent") as Absent;

/** What a loader may return: a value, `unavailable` or `absent`, directly or as a promise. */
export type Loaded<T> = T | Unavailable | Absent;

/** One independently observed, typed value of the System Context. */
export interface Source<S extends TSchema = TSchema> {
  /** Stable namespaced key, `namespace/name`. */
  readonly key: Key;
  /** TypeBox schema; it is the JSON codec (use `Type.Codec` for non-JSON values). */
  readonly schema: S;
  /** Observes the current value. */
  load(): Loaded<StaticDecode<S>> | Promise<Loaded<StaticDecode<S>>>;
  /** Text of this source in a Baseline System Context. Pure, non-empty. */
  baseline(current: StaticDecode<S>): string;
  /** Text of a Mid-Conversation System Message carrying the newly effective value. Pure, non-empty. */
  update(previous: StaticDecode<S>, current: StaticDecode<S>): string;
  /** Text telling the model the source no longer applies. Pure, non-empty. Makes the source removable. */
  removed?(previous: StaticDecode<S>): string;
}

/** A renderer's output, or why it could not be used. */
export type Rendering = { readonly ok: true; readonly text: string } | { readonly ok: false; readonly error: RenderFailed };

/** An observed value of one source, with everything reconciliation may ask of it. */
export interface Present {
  readonly kind: "present";
  /** Whether the encoded value has the same canonical JSON as a stored one. */
  isSameAs(stored: Json): boolean;
  /** The stored value decoded under the current schema, or `undefined` if it no longer decodes. */
  decodeStored(stored: Json): { readonly value: unknown } | undefined;
  baseline(): Rendering;
  update(previous: unknown): Rendering;
  /** The snapshot entry admitting this value (encoded value plus pre-rendered removal text). */
  entry(): { readonly ok: true; readonly entry: SnapshotEntry } | { readonly ok: false; readonly error: RenderFailed };
}

/** One observation of one source. */
export type Observation = { readonly kind: "unavailable" } | { readonly kind: "absent" } | Present;

/** A source with its value type hidden. */
export interface PackedSource {
  readonly key: Key;
  /** Core sources block initialization when unavailable; contained (plugin) sources are left out. */
  readonly blocksInitialization: boolean;
  /**
   * Observes the source once. Rejects only for trusted sources (a throwing core loader).
   * `stored` is the encoded value the operation's snapshot admitted for this key, if any.
   */
  observe(stored?: Json): Promise<Observation>;
  /** Called when a contained source's rendering fails after observation. */
  readonly onRenderFault?: (error: RenderFailed) => void;
  /** The group this source is observed with, if any: an operation observes a group's sources by one call. */
  readonly group?: ObservationGroup;
}

/**
 * Sources observed by one call for all of them, as one plugin's worker answers all its
 * sources of a boundary in one message. An operation observes each group it composes once.
 */
export interface ObservationGroup {
  /**
   * Observes each of `sources` (sources of this group) once, given the value the operation's
   * snapshot admitted for it (`stored[i]`): one observation each, in order. Never rejects.
   */
  observe(sources: readonly PackedSource[], stored: readonly (Json | undefined)[]): Promise<readonly Observation[]>;
}

const carrier = Symbol.for("context-host/system-context");

/** Opaque carrier of zero or more Context Sources, in composition order. */
export interface SystemContext {
  readonly [carrier]: readonly PackedSource[];
}

/** The sources of a context, in composition order. */
export function sourcesOf(context: SystemContext): readonly PackedSource[] {
  return context[carrier];
}

/** A context of exactly these sources (for this layer's own kinds of source). */
export function carry(sources: readonly PackedSource[]): SystemContext {
  return Object.freeze({ [carrier]: Object.freeze(sources.slice()) });
}

/** The identity context: no sources. */
export const empty: SystemContext = carry([]);

/** Concatenates contexts in caller order; a repeated source key throws `DuplicateKeyError`. */
export function combine(contexts: readonly SystemContext[]): SystemContext {
  const sources: PackedSource[] = [];
  const keys = new Set<Key>();
  for (const context of contexts) {
    for (const source of sourcesOf(context)) {
      if (keys.has(source.key)) throw new DuplicateKeyError({ key: source.key });
      keys.add(source.key);
      sources.push(source);
    }
  }
  return carry(sources);
}

/** How `make` treats faults. Trusted sources throw; contained ones become unavailable. */
export interface Containment {
  /** Receives every contained fault: the phase and the error. */
  report(fault: SourceFault): void;
  /** Longest accepted rendering, in UTF-16 code units. */
  readonly maxTextLength: number;
}

/** A fault of a contained Context Source, reported instead of thrown. */
export interface SourceFault {
  readonly key: Key;
  readonly phase: "load" | "value" | Renderer;
  readonly error: unknown;
}

const validators = new WeakMap<TSchema, Validator>();

/**
 * A schema's values are checked by TypeBox's interpreter until it has checked this many (for
 * every source that shares it); then it is compiled, and every source of it uses the compiled
 * one. Compiling costs as much as dozens of checks, and most sources are checked a few times
 * at start-up (a plugin worker's start pays for every schema it compiles).
 */
const checksBeforeCompiling = 16;

/** How many values each schema not compiled yet has had checked. */
const interpretedChecks = new WeakMap<TSchema, number>();

/** The schema's compiled validator, compiled now if its checks so far make it due; else `undefined` (check it interpreted). */
function validatorWhenDue(schema: TSchema): Validator | undefined {
  const compiled = validators.get(schema);
  if (compiled !== undefined) return compiled;
  const checks = (interpretedChecks.get(schema) ?? 0) + 1;
  interpretedChecks.set(schema, checks);
  return checks >= checksBeforeCompiling ? validatorFor(schema) : undefined;
}

function validatorFor(schema: TSchema): Validator {
  let validator = validators.get(schema);
  if (validator === undefined) {
    validator = Compile(schema) as unknown as Validator;
    validators.set(schema, validator);
  }
  return validator;
}

/** Closes one typed Context Source into an opaque `SystemContext`. */
export function make<S extends TSchema>(source: Source<S>): SystemContext {
  return carry([pack(source as unknown as Source, undefined)]);
}

/**
 * Closes an untrusted Context Source (a plugin's) so that a loader that throws,
 * a value its schema rejects and a renderer that throws, returns empty text or
 * more than `maxTextLength` make it `unavailable` for that observation, reported
 * through `containment.report`. It never blocks initialization.
 */
export function contain<S extends TSchema>(source: Source<S>, containment: Containment): SystemContext {
  return carry([pack(source as unknown as Source, containment)]);
}

/**
 * One source's codec and renderers, checked once at `make`. Observations are small
 * objects whose methods live on prototypes: a boundary over many sources allocates
 * no closures per source. Exported for the plugin worker, which encodes and renders a
 * source where its schema lives (not part of the package's API).
 */
export class SourceCodec {
  readonly hasCodec: boolean;
  #validator: Validator | undefined;

  constructor(
    readonly source: Source,
    readonly maxTextLength: number,
  ) {
    this.#validator = validators.get(source.schema);
    this.hasCodec = HasCodec(source.schema);
  }

  get key(): Key {
    return this.source.key;
  }

  render(renderer: Renderer, current: unknown, previous?: unknown): Rendering {
    const { source, key } = this;
    let text: unknown;
    try {
      if (renderer === "baseline") text = source.baseline(current);
      else if (renderer === "update") text = source.update(previous, current);
      else text = source.removed?.(current);
    } catch (cause) {
      return { ok: false, error: new RenderFailed({ key, renderer, reason: `threw: ${messageOf(cause)}`, cause }) };
    }
    if (typeof text !== "string")
      return { ok: false, error: new RenderFailed({ key, renderer, reason: `returned ${typeof text}, not text` }) };
    if (text.length === 0) return { ok: false, error: new RenderFailed({ key, renderer, reason: "returned empty text" }) };
    if (text.length > this.maxTextLength) {
      const reason = `returned ${text.length} characters, over the limit of ${this.maxTextLength}`;
      return { ok: false, error: new RenderFailed({ key, renderer, reason }) };
    }
    return new Rendered(text);
  }

  #check(value: unknown): boolean {
    this.#validator ??= validatorWhenDue(this.source.schema);
    return this.#validator === undefined ? Check(this.source.schema, value) : this.#validator.Check(value);
  }

  /** Encodes a loaded value strictly: encode, then check, nothing converted or stripped. */
  encode(value: unknown): unknown {
    return this.checked(this.encoded(value));
  }

  /**
   * A loaded value through the schema's codecs (the value itself without one), not checked yet:
   * what is compared with a value already admitted, which was checked when it was.
   */
  encoded(value: unknown): unknown {
    if (!this.hasCodec) return value;
    try {
      return EncodeUnsafe({}, this.source.schema, value);
    } catch (cause) {
      throw new ValueRejected({ key: this.key, path: "", reason: `encoding failed: ${messageOf(cause)}`, cause });
    }
  }

  /** An encoded value the schema accepts, or `ValueRejected` naming the first place it refuses. */
  checked(encoded: unknown): unknown {
    if (!this.#check(encoded)) {
      const first = (this.#validator?.Errors(encoded) ?? Errors(this.source.schema, encoded))[0];
      throw new ValueRejected({ key: this.key, path: first?.instancePath ?? "", reason: first?.message ?? "does not match" });
    }
    return encoded;
  }

  /** A stored value decoded under the current schema (check first), or `undefined`. */
  decodeStored(stored: Json): { readonly value: unknown } | undefined {
    if (!this.#check(stored)) return undefined;
    const copy = toPlainJson(stored);
    if (!this.hasCodec) return new Decoded(copy);
    try {
      return new Decoded(DecodeUnsafe({}, this.source.schema, copy));
    } catch {
      return undefined;
    }
  }

  /** The encoded value as owned plain JSON, or `ValueRejected` naming the path. */
  plain(encoded: unknown): Json {
    try {
      return toPlainJson(encoded);
    } catch (error) {
      if (error instanceof ValueNotPlainJson) throw new ValueRejected({ key: this.key, path: error.path, reason: error.reason });
      throw error;
    }
  }
}

class PresentValue implements Present {
  readonly kind = "present";

  constructor(
    readonly codec: SourceCodec,
    readonly value: unknown,
    readonly encoded: unknown,
    /** Plain-JSON-ness is proven lazily: by equality with a stored value, or at admission. */
    private admitted: Json | undefined,
  ) {}

  isSameAs(stored: Json): boolean {
    return isSameJson(stored, this.encoded);
  }

  decodeStored(stored: Json) {
    return this.codec.decodeStored(stored);
  }

  baseline(): Rendering {
    return this.codec.render("baseline", this.value);
  }

  update(previous: unknown): Rendering {
    return this.codec.render("update", this.value, previous);
  }

  entry(): { readonly ok: true; readonly entry: SnapshotEntry } | { readonly ok: false; readonly error: RenderFailed } {
    this.admitted ??= this.codec.plain(this.encoded);
    if (this.codec.source.removed === undefined) return new EntryMade({ value: this.admitted });
    const rendering = this.codec.render("removed", this.value);
    if (!rendering.ok) return rendering;
    return new EntryMade({ value: this.admitted, removed: rendering.text });
  }
}

const unavailableObservation: Observation = Object.freeze({ kind: "unavailable" });
const absentObservation: Observation = Object.freeze({ kind: "absent" });

function pack(source: Source, containment: Containment | undefined): PackedSource {
  if (!isKey(source.key)) {
    throw new KeyInvalid({ key: source.key, reason: `expected "namespace/name" in lower case, matching ${keyPattern}` });
  }
  const codec = new SourceCodec(source, containment?.maxTextLength ?? Number.POSITIVE_INFINITY);
  const { key } = source;

  if (containment === undefined) {
    return {
      key,
      blocksInitialization: true,
      async observe(): Promise<Observation> {
        const value = await source.load();
        if (value === unavailable) return unavailableObservation;
        if (value === absent) return absentObservation;
        return new PresentValue(codec, value, codec.encode(value), undefined);
      },
    };
  }

  const report = (fault: SourceFault) => {
    try {
      containment.report(fault);
    } catch {
      // A failing reporter must not turn a contained fault into a host failure.
    }
  };
  return {
    key,
    blocksInitialization: false,
    async observe(): Promise<Observation> {
      let value: unknown;
      try {
        value = await source.load();
      } catch (error) {
        report({ key, phase: "load", error });
        return unavailableObservation;
      }
      if (value === unavailable) return unavailableObservation;
      if (value === absent) return absentObservation;
      try {
        const encoded = codec.encode(value);
        return new PresentValue(codec, value, encoded, codec.plain(encoded));
      } catch (error) {
        report({ key, phase: "value", error });
        return unavailableObservation;
      }
    },
    onRenderFault: (error) => report({ key, phase: error.renderer, error }),
  };
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
