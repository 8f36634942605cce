// Owns where one plugin file's loads stand, as explicit states and their transitions
// (decision 162): the plugin set moves a file's state only through these functions.

import type { Loaded } from "./hosted-plugin.ts";

export type LoadState =
  /** Every change has been seen by a load. */
  | { readonly kind: "idle" }
  /**
   * A change no load has seen yet. `isProvisional`: only first events of bursts are due, so
   * a failure is not final (the quiet re-check decides). `preload`: the first load of a
   * plugin a scan found, started at once so that setups run concurrently.
   */
  | { readonly kind: "due"; readonly isProvisional: boolean; readonly preload?: Promise<Loaded> }
  /** A load runs; `change` is a change that arrived meanwhile: the load's result is stale. */
  | { readonly kind: "loading"; readonly change?: { readonly isProvisional: boolean } }
  /** The file left (or the set closed): no load starts any more. */
  | { readonly kind: "removed" };

export const idle: LoadState = Object.freeze({ kind: "idle" });
export const removed: LoadState = Object.freeze({ kind: "removed" });

/** A file changed. A provisional change does not demote a final one that is still due. */
export function changed(state: LoadState, isProvisional: boolean): LoadState {
  if (state.kind === "idle") return { kind: "due", isProvisional };
  if (state.kind === "due") return { ...state, isProvisional: state.isProvisional && isProvisional };
  if (state.kind === "removed") return state;
  const wasProvisional = state.change?.isProvisional ?? true;
  return { kind: "loading", change: { isProvisional: wasProvisional && isProvisional } };
}

/** A scan found the file: its first load is due, and already runs (so setups run concurrently). */
export function discovered(preload: Promise<Loaded>): LoadState {
  return { kind: "due", isProvisional: false, preload };
}

export function began(state: LoadState): LoadState {
  if (state.kind !== "due") throw new Error(`a load cannot begin in state ${state.kind}`);
  return { kind: "loading" };
}

/** The load ended: a change that arrived meanwhile is due now. */
export function finished(state: LoadState): LoadState {
  if (state.kind !== "loading") return state;
  return state.change === undefined ? idle : { kind: "due", isProvisional: state.change.isProvisional };
}

/** Whether what the running load produces must not be swapped in. */
export function isStale(state: LoadState): boolean {
  return state.kind === "removed" || (state.kind === "loading" && state.change !== undefined);
}
