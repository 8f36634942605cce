// Owns the shape of a Context Source key: a stable `namespace/name` identity.

/** The pattern every Context Source key matches: `namespace/name`, lower case. */
export const keyPattern = /^[a-z0-9][a-z0-9._-]*\/[a-z0-9][a-z0-9._/-]*$/;

/** A stable, namespaced Context Source key such as `core/date` or `git/branch`. */
export type Key = string;

/** Whether `s` is a valid Context Source key (`namespace/name`). */
export function isKey(s: unknown): s is Key {
  return typeof s === "string" && keyPattern.test(s);
}

/** The namespace of a key: the part before the first `/`. */
export function namespaceOf(key: Key): string {
  return key.slice(0, key.indexOf("/"));
}
