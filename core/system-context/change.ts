// Owns what reconciling knew about the snapshot it made: which entries it wrote and which
// keys it removed against the snapshot it was reconciled from. A store writes only those
// instead of comparing every entry again. Bookkeeping only: no I/O, no clock.

import type { Key } from "./key.ts";
import type { Snapshot } from "./snapshot.ts";

/** The entries a reconciled snapshot wrote (introduced or updated) and the keys it no longer has. */
export interface ReconciledChange {
  readonly written: readonly Key[];
  readonly removed: readonly Key[];
}

/**
 * Per snapshot made by `reconcile`: its change and the snapshot it was reconciled from,
 * held weakly so that no snapshot keeps its predecessors alive.
 */
const changes = new WeakMap<Snapshot, { readonly from: WeakRef<Snapshot>; readonly change: ReconciledChange }>();

/** Records that `next` was reconciled from `from` with `change`. */
export function recordChange(next: Snapshot, from: Snapshot, change: ReconciledChange): void {
  changes.set(next, { from: new WeakRef(from), change });
}

/** The change reconciling made from `from` to `next`, if `next` was reconciled from that very snapshot; else `undefined`. */
export function reconciledChange(next: Snapshot, from: Snapshot): ReconciledChange | undefined {
  const recorded = changes.get(next);
  return recorded !== undefined && recorded.from.deref() === from ? recorded.change : undefined;
}
