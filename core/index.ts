/**
 * context-host: keeps an AI agent's System Context correct and prompt-cache
 * friendly while its environment changes.
 *
 * @module
 */

export * as SystemContext from "./system-context/index.ts";
export {
  absent,
  DuplicateKeyError,
  type Generation,
  InitializationBlocked,
  isKey,
  type Json,
  type Key,
  parseSnapshot,
  type ReconcileResult,
  RenderError,
  type ReplacementResult,
  Snapshot,
  SnapshotInvalid,
  type Source,
  type SystemContext as SystemContextCarrier,
  unavailable,
  ValueRejected,
} from "./system-context/index.ts";
