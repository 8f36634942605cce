// Owns the short-lived records a boundary makes for each source it admits or updates: a text
// rendered, a snapshot entry made, a stored value decoded (and, in reconcile.ts, a text admitted).
// They are instances of classes, not object literals, for V8's sake: with a full collection
// before each boundary, the literals' hidden classes were collected and V8 threw away the
// optimized code of `plan` and `reconcileObserved`, which inline the functions making them
// (`node --trace-opt`: compiled 14 times in 50 boundaries; twice with these classes; the
// `plugin-reconcile` boundary at ~5.3 × canonical JSON instead of ~3.8 ×). It is a measured
// effect, not a rule: see decision 214 for how to check it.

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
