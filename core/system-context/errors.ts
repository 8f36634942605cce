// Owns the named errors of System Context composition and reconciliation.
// Each carries the offending key so a host can say exactly what went wrong.

import type { Key } from "./key.ts";

/** `combine` met the same Context Source key twice. */
export class DuplicateKeyError extends Error {
  override readonly name = "DuplicateKeyError";
  constructor(readonly key: Key) {
    super(`duplicate Context Source key "${key}": each key may appear once in a System Context`);
  }
}

/** `initialize` could not render a Baseline because these sources were unavailable. */
export class InitializationBlocked extends Error {
  override readonly name = "InitializationBlocked";
  constructor(readonly keys: readonly Key[]) {
    super(`initialization blocked: unavailable Context Source${keys.length === 1 ? "" : "s"} ${keys.join(", ")}`);
  }
}

/** The renderers of a Context Source. */
export type Renderer = "baseline" | "update" | "removed";

/**
 * A renderer returned empty text, something that is not text, or threw (then `cause` is
 * what it threw). A core source's throwing renderer rejects with its own error instead;
 * a contained (plugin) source reports this error.
 */
export class RenderError extends Error {
  override readonly name = "RenderError";
  constructor(
    readonly key: Key,
    readonly renderer: Renderer,
    reason: string,
    options?: { cause?: unknown },
  ) {
    super(`Context Source "${key}": renderer "${renderer}" ${reason}`, options);
  }
}

/** A loaded value was rejected by the source's schema (or is not plain JSON once encoded). */
export class ValueRejected extends Error {
  override readonly name = "ValueRejected";
  constructor(
    readonly key: Key,
    readonly path: string,
    reason: string,
    options?: { cause?: unknown },
  ) {
    super(`Context Source "${key}": loaded value rejected by its schema at ${path === "" ? "/" : path}: ${reason}`, options);
  }
}

/** A snapshot read back from storage is not a valid Context Snapshot. */
export class SnapshotInvalid extends Error {
  override readonly name = "SnapshotInvalid";
  constructor(
    readonly key: Key | undefined,
    readonly path: string,
    reason: string,
  ) {
    super(`invalid Context Snapshot${key === undefined ? "" : ` entry "${key}"`} at ${path === "" ? "/" : path}: ${reason}`);
  }
}
