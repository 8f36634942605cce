/**
 * System Context: the structured collection of contextual facts presented to the
 * model as initial instructions (a Baseline System Context) and chronological
 * updates (Mid-Conversation System Messages).
 *
 * A Context Source observes one typed value and renders it. `make` hides the
 * value type so differently typed sources compose uniformly; `combine` keeps the
 * caller's order. `initialize` renders a Baseline with its Context Snapshot;
 * `reconcile` compares a fresh observation with the snapshot and decides one next
 * action; `replace` starts a fresh generation unless admitted context is
 * unavailable. The model only ever sees newly effective state, never a diff.
 *
 * Pure: no I/O and no clock. Loaders are the only effects, and they are the
 * caller's.
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
} from "./errors.ts";
export { canonicalJson, type Json, toPlainJson, ValueNotPlainJson } from "./json.ts";
export { isKey, type Key, keyPattern, namespaceOf } from "./key.ts";
export {
  type PrerenderedGroup,
  type PrerenderedLimits,
  type PrerenderedObservation,
  type PrerenderedSource,
  prerendered,
  prerenderedGroup,
  type RenderedText,
} from "./prerendered.ts";
export {
  type Generation,
  initialize,
  type ReconcileResult,
  type ReplacementResult,
  type ReplaceOrReconcileResult,
  reconcile,
  replace,
  replaceOrReconcile,
  type SnapshotChange,
} from "./reconcile.ts";
export { parseSnapshot, Snapshot, SnapshotEntry } from "./snapshot.ts";
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
} from "./source.ts";
