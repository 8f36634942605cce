/**
 * context-host/system-context: the pure core. Context Sources closed into opaque
 * `SystemContext` carriers, composed in order, initialized into a Baseline with its
 * Context Snapshot, and reconciled against that snapshot at each boundary. No I/O and
 * no clock: loaders are the only effects, and they are the caller's.
 *
 * ```ts
 * import * as SystemContext from "context-host/system-context";
 * const context = SystemContext.combine([SystemContext.make(gitBranch)]);
 * const { baseline, snapshot } = await SystemContext.initialize(context);
 * ```
 *
 * @module
 */

export {
  DuplicateKeyError,
  InitializationBlocked,
  KeyInvalid,
  type Renderer,
  RenderFailed,
  SnapshotInvalid,
  SystemContextError,
  ValueRejected,
} from "./system-context/errors.ts";
export { canonicalJson, type Json, ValueNotPlainJson } from "./system-context/json.ts";
export { isKey, type Key } from "./system-context/key.ts";
export {
  type Generation,
  initialize,
  type ReconcileResult,
  type ReplacementResult,
  reconcile,
  replace,
  replaceOrReconcile,
  type SnapshotChange,
} from "./system-context/reconcile.ts";
export { parseSnapshot, Snapshot, SnapshotEntry } from "./system-context/snapshot.ts";
export {
  type Absent,
  absent,
  type Containment,
  combine,
  contain,
  empty,
  type Loaded,
  make,
  type Source,
  type SourceFault,
  type SystemContext,
  type Unavailable,
  unavailable,
} from "./system-context/source.ts";
