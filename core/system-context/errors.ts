// Owns the named errors of System Context composition and reconciliation (decision 011:
// one options object, `name` is the class name). Each carries the offending key so a host
// can say exactly what went wrong. The pure core imports nothing, so these extend
// `SystemContextError` here rather than the host's `ContextHostError`.

import type { Key } from "./key.ts";

/** The base of the System Context's named errors. */
export class SystemContextError extends Error {
  override get name(): string {
    return this.constructor.name;
  }
}

/** A Context Source's key is not a `namespace/name` key; `key` is what was given (it may not be a string). */
export class KeyInvalid extends SystemContextError {
  readonly key: unknown;
  readonly reason: string;
  constructor(options: { readonly key: unknown; readonly reason: string }) {
    super(`invalid Context Source key ${JSON.stringify(options.key) ?? String(options.key)}: ${options.reason}`);
    this.key = options.key;
    this.reason = options.reason;
  }
}

/** `combine` met the same Context Source key twice (the SPEC's name). */
export class DuplicateKeyError extends SystemContextError {
  readonly key: Key;
  constructor(options: { readonly key: Key }) {
    super(`duplicate Context Source key "${options.key}": each key may appear once in a System Context`);
    this.key = options.key;
  }
}

/** `initialize` could not render a Baseline because these sources were unavailable. */
export class InitializationBlocked extends SystemContextError {
  readonly keys: readonly Key[];
  constructor(options: { readonly keys: readonly Key[] }) {
    const { keys } = options;
    super(`initialization blocked: unavailable Context Source${keys.length === 1 ? "" : "s"} ${keys.join(", ")}`);
    this.keys = keys;
  }
}

/** The renderers of a Context Source. */
export type Renderer = "baseline" | "update" | "removed";

/**
 * A renderer returned empty text, something that is not text, or threw (then `cause` is
 * what it threw). A core source's throwing renderer rejects with its own error instead;
 * a contained (plugin) source reports this error.
 */
export class RenderFailed extends SystemContextError {
  readonly key: Key;
  readonly renderer: Renderer;
  readonly reason: string;
  constructor(options: { readonly key: Key; readonly renderer: Renderer; readonly reason: string; readonly cause?: unknown }) {
    super(
      `Context Source "${options.key}": renderer "${options.renderer}" ${options.reason}`,
      options.cause === undefined ? undefined : { cause: options.cause },
    );
    this.key = options.key;
    this.renderer = options.renderer;
    this.reason = options.reason;
  }
}

/** A loaded value was rejected by the source's schema (or is not plain JSON once encoded). */
export class ValueRejected extends SystemContextError {
  readonly key: Key;
  /** JSON Pointer of the rejected part, `""` for the whole value. */
  readonly path: string;
  readonly reason: string;
  constructor(options: { readonly key: Key; readonly path: string; readonly reason: string; readonly cause?: unknown }) {
    super(
      `Context Source "${options.key}": loaded value rejected by its schema at ${options.path === "" ? "/" : options.path}: ${options.reason}`,
      options.cause === undefined ? undefined : { cause: options.cause },
    );
    this.key = options.key;
    this.path = options.path;
    this.reason = options.reason;
  }
}

/** A snapshot read back from storage is not a valid Context Snapshot. */
export class SnapshotInvalid extends SystemContextError {
  readonly key: Key | undefined;
  readonly path: string;
  readonly reason: string;
  constructor(options: { readonly key?: Key; readonly path: string; readonly reason: string }) {
    const { key, path, reason } = options;
    super(`invalid Context Snapshot${key === undefined ? "" : ` entry "${key}"`} at ${path === "" ? "/" : path}: ${reason}`);
    this.key = key;
    this.path = path;
    this.reason = reason;
  }
}
