// Owns plain JSON: the only shape a Context Snapshot may hold, its strict checks,
// and the comparison rule (canonical JSON, i.e. equality regardless of key order).

import { SystemContextError } from "./errors.ts";

/** A plain JSON value. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Keys that are never accepted in stored JSON: they can poison object prototypes. */
const forbiddenKeys = new Set(["__proto__", "constructor"]);

/** A value that is not plain JSON: `path` is the JSON Pointer of the offending part (`""` for the whole value). */
export class ValueNotPlainJson extends SystemContextError {
  readonly path: string;
  readonly reason: string;
  constructor(options: { readonly path: string; readonly reason: string }) {
    super(`value${options.path === "" ? "" : ` at ${options.path}`} ${options.reason}`);
    this.path = options.path;
    this.reason = options.reason;
  }
}

// Realm-independent: an object made in another realm (a plugin's \`node:vm\` context, decision
// 185) has that realm's \`Object.prototype\`, whose own prototype is null as this one's is.
function isPlainObject(value: object): boolean {
  const proto = Object.getPrototypeOf(value);
  return proto === null || Object.getPrototypeOf(proto) === null;
}

/**
 * Checks that `value` is plain JSON and returns a deep copy of it, so the caller
 * owns data nobody else can mutate. Throws `ValueNotPlainJson` naming the first bad part.
 */
export function toPlainJson(value: unknown): Json {
  return walkPlainJson(value, [], new Set(), true);
}

/** Checks that `value` is plain JSON, without copying it. Throws `ValueNotPlainJson` like `toPlainJson`. */
export function assertPlainJson(value: unknown): asserts value is Json {
  walkPlainJson(value, [], new Set(), false);
}

/** The JSON Pointer of a path of keys. */
function pointerOf(keys: readonly (string | number)[]): string {
  let path = "";
  for (const key of keys) path += `/${String(key).replaceAll("~", "~0").replaceAll("/", "~1")}`;
  return path;
}

// `keys` is the path to `value`, pushed and popped as the walk goes: the pointer text is
// built only for an error, never for every node of a value that is fine.
function walkPlainJson(value: unknown, keys: (string | number)[], seen: Set<object>, isCopy: boolean): Json {
  switch (typeof value) {
    case "string":
    case "boolean":
      return value;
    case "number":
      if (!Number.isFinite(value))
        throw new ValueNotPlainJson({ path: pointerOf(keys), reason: `is ${value}, not a finite number` });
      return Object.is(value, -0) ? 0 : value;
    case "object": {
      if (value === null) return null;
      if (seen.has(value)) throw new ValueNotPlainJson({ path: pointerOf(keys), reason: "is a cycle" });
      seen.add(value);
      try {
        if (Array.isArray(value)) {
          const copy: Json[] = isCopy ? new Array(value.length) : (value as Json[]);
          for (let i = 0; i < value.length; i++) {
            keys.push(i);
            const item = walkPlainJson(value[i], keys, seen, isCopy);
            keys.pop();
            if (isCopy) copy[i] = item;
          }
          return copy;
        }
        if (!isPlainObject(value)) {
          throw new ValueNotPlainJson({
            path: pointerOf(keys),
            reason: `is a ${value.constructor?.name ?? "non-plain"} object, not plain JSON`,
          });
        }
        const copy: { [key: string]: Json } | undefined = isCopy ? {} : undefined;
        for (const key of Object.keys(value)) {
          keys.push(key);
          if (forbiddenKeys.has(key))
            throw new ValueNotPlainJson({ path: pointerOf(keys), reason: `uses the forbidden key "${key}"` });
          const item = walkPlainJson((value as Record<string, unknown>)[key], keys, seen, isCopy);
          keys.pop();
          if (copy !== undefined) copy[key] = item;
        }
        return copy ?? (value as Json);
      } finally {
        seen.delete(value);
      }
    }
    default:
      throw new ValueNotPlainJson({ path: pointerOf(keys), reason: `is ${typeof value}, not JSON` });
  }
}

/**
 * Whether a stored plain JSON value and a candidate have the same canonical JSON.
 * Walks both without building strings; a candidate that is not plain JSON is
 * never equal, so it goes on to be checked (and rejected) by `toPlainJson`.
 */
export function isSameJson(stored: Json, candidate: unknown): boolean {
  if (stored === null || typeof stored !== "object") {
    return stored === candidate;
  }
  if (candidate === null || typeof candidate !== "object") return false;
  if (Array.isArray(stored)) {
    if (!Array.isArray(candidate) || candidate.length !== stored.length) return false;
    for (let i = 0; i < stored.length; i++) if (!isSameJson(stored[i] as Json, candidate[i])) return false;
    return true;
  }
  if (Array.isArray(candidate) || !isPlainObject(candidate)) return false;
  const storedKeys = Object.keys(stored);
  const candidateObject = candidate as Record<string, unknown>;
  if (Object.keys(candidateObject).length !== storedKeys.length) return false;
  for (const key of storedKeys) {
    if (!Object.hasOwn(candidateObject, key)) return false;
    if (!isSameJson(stored[key] as Json, candidateObject[key])) return false;
  }
  return true;
}

/** Canonical JSON text of a plain JSON value: object keys sorted, no spaces. */
export function canonicalJson(value: Json): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  const keys = Object.keys(value).sort();
  let out = "{";
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i] as string;
    if (i > 0) out += ",";
    out += `${JSON.stringify(key)}:${canonicalJson(value[key] as Json)}`;
  }
  return `${out}}`;
}
