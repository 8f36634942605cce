// Owns the short-lived records a boundary makes for each source it admits or updates: a text
// rendered, a snapshot entry made, a stored value decoded (and, in reconcile.ts, a text admitted).
// They are instances of classes declared once, not object literals. As literals, their hidden
// classes did not outlive a full collection, and V8 threw away the optimized code that made
// them: with a collection before each boundary, `plan` and `reconcileObserved` were compiled
// again 14 times in 50 boundaries (`node --trace-opt`), twice with these classes, and the
// `plugin-reconcile` boundary took ~5.3 × canonical JSON instead of ~3.8 × (decision 214).

import type { SnapshotEntry } from "./snapshot.ts";

/** A renderer's usable text (`Rendering` when it is `ok`). */
export class Rendered {
  readonly ok = true as const;
  readonly text: string;

  constructor(text: string) {
    this.text = text;
  }
}

/** The snapshot entry that admits a value (`Present.entry()` when it is `ok`). */
export class EntryMade {
  readonly ok = true as const;
  readonly entry: SnapshotEntry;

  constructor(entry: SnapshotEntry) {
    this.entry = entry;
  }
}

/** A stored value as its source's type decodes it (`Present.decodeStored`). */
export class Decoded {
  readonly value: unknown;

  constructor(value: unknown) {
    this.value = value;
  }
}
