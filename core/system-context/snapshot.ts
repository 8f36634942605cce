// Owns the Context Snapshot: its TypeBox schema and the strict parse that
// validates whatever comes back from storage before reconciliation trusts it.

import Type from "typebox";
import { Compile } from "typebox/compile";
import { SnapshotInvalid } from "./errors.ts";
import { assertPlainJson, type Json, toPlainJson, ValueNotPlainJson } from "./json.ts";
import { isKey, type Key, keyPattern } from "./key.ts";

/** One admitted source: its codec-encoded value and, if removable, its pre-rendered removal text. */
export const SnapshotEntry = Type.Object(
  {
    value: Type.Unknown({ description: "the codec-encoded value, plain JSON" }),
    removed: Type.Optional(Type.String({ minLength: 1, description: "removal text rendered at admission" })),
  },
  { additionalProperties: false },
);

/** The Context Snapshot: one entry per admitted Context Source key. */
export const Snapshot = Type.Record(Type.String({ pattern: keyPattern.source }), SnapshotEntry);

/** One admitted source in a Context Snapshot. */
export interface SnapshotEntry {
  readonly value: Json;
  readonly removed?: string;
}

/** The Context Snapshot: plain JSON, stored durably beside the Baseline. */
export type Snapshot = Readonly<Record<Key, SnapshotEntry>>;

const entryValidator = Compile(SnapshotEntry);

/**
 * Validates a snapshot read from storage and returns an owned copy. Throws
 * `SnapshotInvalid` naming the key, the place and the reason: a key that is not
 * namespaced, an empty `removed`, an unknown field, a `__proto__`/`constructor`
 * key at any depth, or anything that is not plain JSON.
 */
export function parseSnapshot(json: unknown): Snapshot {
  return trust(checkSnapshot(json, true));
}

/** Snapshots this module made or checked: reconciliation need not check them again. */
const trusted = new WeakSet<object>();

/** Marks a snapshot as made by the System Context (or already checked). */
export function trust(snapshot: Snapshot): Snapshot {
  trusted.add(snapshot);
  return snapshot;
}

/**
 * The snapshot a caller handed to `reconcile` or `replace`, checked exactly like
 * `parseSnapshot` unless the System Context made it. Entries are not copied, so an
 * unchanged entry is carried forward as the very object given.
 */
export function checkedSnapshot(snapshot: Snapshot): Snapshot {
  if (trusted.has(snapshot)) return snapshot;
  checkSnapshot(snapshot, false);
  return trust(snapshot);
}

function checkSnapshot(json: unknown, isCopy: boolean): Snapshot {
  if (json === null || typeof json !== "object" || Array.isArray(json)) {
    throw new SnapshotInvalid({ path: "", reason: `expected an object of entries, got ${describe(json)}` });
  }
  const proto = Object.getPrototypeOf(json);
  if (proto !== Object.prototype && proto !== null) {
    throw new SnapshotInvalid({ path: "", reason: "expected a plain object of entries" });
  }
  const result: Record<Key, SnapshotEntry> = {};
  for (const key of Object.keys(json)) {
    if (!isKey(key))
      throw new SnapshotInvalid({ key, path: "", reason: `"${key}" is not a namespaced Context Source key (namespace/name)` });
    const entry = (json as Record<string, unknown>)[key];
    let copy: Json;
    try {
      if (isCopy) copy = toPlainJson(entry);
      else {
        assertPlainJson(entry);
        copy = entry;
      }
    } catch (error) {
      if (error instanceof ValueNotPlainJson) throw new SnapshotInvalid({ key, path: error.path, reason: error.reason });
      throw error;
    }
    if (!entryValidator.Check(copy)) {
      const first = entryValidator.Errors(copy)[0];
      throw new SnapshotInvalid({ key, path: first?.instancePath ?? "", reason: first?.message ?? "not a snapshot entry" });
    }
    result[key] = copy as unknown as SnapshotEntry;
  }
  return result;
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value;
}
