// Owns the three operations on a composed System Context. Each one observes every
// source exactly once (concurrently), then plans in small pure steps, and renders
// only what the plan admits:
//   initialize — a fresh Baseline System Context and its Context Snapshot;
//   reconcile  — the next action against the active snapshot;
//   replace    — a fresh generation, unless admitted context is unavailable;
//   replaceOrReconcile — replace, or while that is blocked reconcile, from one observation.

import { InitializationBlocked, type RenderFailed } from "./errors.ts";
import type { Json } from "./json.ts";
import type { Key } from "./key.ts";
import { checkedSnapshot, type Snapshot, type SnapshotEntry, trust } from "./snapshot.ts";
import {
  type Observation,
  type ObservationGroup,
  type PackedSource,
  type Present,
  type SystemContext,
  sourcesOf,
} from "./source.ts";

/** A Baseline System Context with the Context Snapshot it admitted. */
export interface Generation {
  readonly baseline: string;
  readonly snapshot: Snapshot;
}

/** The outcome of `replace`. */
export type ReplacementResult =
  | { readonly kind: "replaced"; readonly generation: Generation }
  | { readonly kind: "replacement-blocked"; readonly keys: readonly Key[] };

/**
 * What an update changed against the snapshot reconciled from: the entries it wrote
 * (introduced or updated), in composition order, and the keys it no longer has. A store
 * writes exactly those (decision 170).
 */
export interface SnapshotChange {
  readonly written: readonly Key[];
  readonly removed: readonly Key[];
}

/** The one next action `reconcile` decides. */
export type ReconcileResult =
  | { readonly kind: "unchanged" }
  | { readonly kind: "updated"; readonly text: string; readonly snapshot: Snapshot; readonly change: SnapshotChange }
  | ReplacementResult;

interface Observed {
  readonly source: PackedSource;
  readonly observation: Observation;
  /** The snapshot's entry for the source, looked up once when it was observed. */
  readonly stored: SnapshotEntry | undefined;
}

const unavailableObservation: Observation = Object.freeze({ kind: "unavailable" });

/** Texts of one System Context are separated by one blank line. */
const separator = "\n\n";

async function observe(context: SystemContext, snapshot?: Snapshot): Promise<Observed[]> {
  const sources = sourcesOf(context);
  const observations: Observation[] = new Array(sources.length);
  /** The sources observed alone, by index, and their pending observations. */
  const alone: number[] = [];
  const pending: Promise<Observation>[] = [];
  const groups = new Map<ObservationGroup, Members>();
  const entries: (SnapshotEntry | undefined)[] = new Array(sources.length);
  // Start every load before awaiting any: sources are observed concurrently, a group's by one
  // call. Each is told the value the snapshot admitted for it (a pre-rendered source renders
  // its update against it). Loops, not callbacks: a closure made per call loses its optimized
  // code at every full collection, and this runs at every boundary.
  for (let i = 0; i < sources.length; i++) {
    const source = sources[i] as PackedSource;
    const entry = snapshot === undefined ? undefined : storedEntry(snapshot, source.key);
    entries[i] = entry;
    const stored = entry?.value;
    if (source.group === undefined) {
      alone.push(i);
      pending.push(source.observe(stored));
      continue;
    }
    const members = membersOf(groups, source.group);
    members.indices.push(i);
    members.sources.push(source);
    members.stored.push(stored);
  }
  const grouped: Promise<void>[] = [];
  for (const [group, members] of groups) grouped.push(observeMembers(group, members, observations));
  const [observedAlone] = await Promise.all([Promise.all(pending), Promise.all(grouped)]);
  for (let k = 0; k < alone.length; k++) observations[alone[k] as number] = observedAlone[k] as Observation;
  const observed: Observed[] = new Array(sources.length);
  for (let i = 0; i < sources.length; i++)
    observed[i] = { source: sources[i] as PackedSource, observation: observations[i] as Observation, stored: entries[i] };
  return observed;
}

/** The sources of one group an operation observes: their indices in composition order, and their admitted values. */
interface Members {
  readonly indices: number[];
  readonly sources: PackedSource[];
  readonly stored: (Json | undefined)[];
}

/**
 * The members of `group` so far. An object literal, not a class: a class's instances made per
 * call take a map a full collection may drop, and the optimized code that assumed it with it.
 */
function membersOf(groups: Map<ObservationGroup, Members>, group: ObservationGroup): Members {
  let members = groups.get(group);
  if (members === undefined) {
    members = { indices: [], sources: [], stored: [] };
    groups.set(group, members);
  }
  return members;
}

/** Observes a group's members by one call, each observation into its source's place. */
async function observeMembers(group: ObservationGroup, members: Members, into: Observation[]) {
  const observed = await group.observe(members.sources, members.stored);
  for (let k = 0; k < members.indices.length; k++) into[members.indices[k] as number] = observed[k] ?? unavailableObservation;
}

function storedEntry(snapshot: Snapshot, key: Key): SnapshotEntry | undefined {
  return Object.hasOwn(snapshot, key) ? snapshot[key] : undefined;
}

/** Renders a fresh generation of the available sources; contained render faults leave a source out. */
function renderGeneration(observed: readonly Observed[]): { generation: Generation; faulted: Set<Key> } {
  const texts: string[] = [];
  const snapshot: Record<Key, SnapshotEntry> = {};
  const faulted = new Set<Key>();
  for (const { source, observation } of observed) {
    if (observation.kind !== "present") continue;
    const admitted = admit(source, observation, observation.baseline());
    if (admitted === undefined) {
      faulted.add(source.key);
      continue;
    }
    texts.push(admitted.text);
    snapshot[source.key] = admitted.entry;
  }
  return { generation: { baseline: texts.join(separator), snapshot: trust(snapshot) }, faulted };
}

/**
 * Pairs a rendering with the snapshot entry that admits the value. A trusted
 * source's render error is thrown; a contained source's is reported and the
 * source counts as unavailable for this observation (`undefined`).
 */
function admit(source: PackedSource, value: Present, rendering: ReturnType<Present["baseline"]>) {
  if (!rendering.ok) return renderFault(source, rendering.error);
  const entry = value.entry();
  if (!entry.ok) return renderFault(source, entry.error);
  return new Admitted(rendering.text, entry.entry);
}

/** A text admitted with its snapshot entry (a class, as the records of outcomes.ts). */
class Admitted {
  readonly text: string;
  readonly entry: SnapshotEntry;

  constructor(text: string, entry: SnapshotEntry) {
    this.text = text;
    this.entry = entry;
  }
}

/**
 * A trusted (core) source's renderer that threw rejects the operation with its own error,
 * as a throwing core loader does, and an unusable text with the `RenderFailed` (which has a
 * `cause` exactly when the renderer threw). A contained source's fault is reported instead.
 */
function renderFault(source: PackedSource, error: RenderFailed): undefined {
  if (source.onRenderFault === undefined) throw error.cause !== undefined ? error.cause : error;
  source.onRenderFault(error);
  return undefined;
}

/** Observes once and renders a fresh Baseline; rejects `InitializationBlocked` if a blocking source is unavailable. */
export async function initialize(context: SystemContext): Promise<Generation> {
  const observed = await observe(context);
  const blocked = observed.filter((o) => o.observation.kind === "unavailable" && o.source.blocksInitialization);
  if (blocked.length > 0) throw new InitializationBlocked({ keys: blocked.map((o) => o.source.key) });
  return renderGeneration(observed).generation;
}

/**
 * Observes once and replaces the generation, unless an admitted source is unavailable.
 * Rejects `SnapshotInvalid` (before loading anything) for a snapshot `parseSnapshot` would refuse.
 */
export async function replace(context: SystemContext, snapshot: Snapshot): Promise<ReplacementResult> {
  const admitted = checkedSnapshot(snapshot);
  return replaceObserved(await observe(context, admitted));
}

function replaceObserved(observed: readonly Observed[]): ReplacementResult {
  const unavailableAdmitted = (faulted: ReadonlySet<Key>) =>
    observed
      .filter((o) => o.stored !== undefined && (o.observation.kind === "unavailable" || faulted.has(o.source.key)))
      .map((o) => o.source.key);
  const blocked = unavailableAdmitted(new Set());
  if (blocked.length > 0) return { kind: "replacement-blocked", keys: blocked };
  const { generation, faulted } = renderGeneration(observed);
  const blockedByFault = unavailableAdmitted(faulted);
  if (blockedByFault.length > 0) return { kind: "replacement-blocked", keys: blockedByFault };
  return { kind: "replaced", generation };
}

/** A plan step's decision for one source, before anything is rendered. */
type Decision =
  | { readonly kind: "keep"; readonly entry: SnapshotEntry }
  | { readonly kind: "omit" }
  | { readonly kind: "introduce"; readonly value: Present }
  | { readonly kind: "update"; readonly value: Present; readonly previous: unknown; readonly entry: SnapshotEntry };

/**
 * Decides, per source, without rendering. Returns `undefined` when the snapshot
 * cannot be carried forward (a stored value that no longer decodes, or an admitted
 * source gone without removal text): reconciliation escalates to replacement.
 */
function plan(
  observed: readonly Observed[],
  snapshot: Snapshot,
): { decisions: Decision[]; removals: string[]; removedKeys: Key[] } | undefined {
  const decisions: Decision[] = [];
  const present: Key[] = [];
  /** How many of the snapshot's entries are present: all of them, and nothing was removed. */
  let storedPresent = 0;
  for (const { source, observation, stored } of observed) {
    if (observation.kind === "unavailable") {
      if (stored !== undefined) {
        present.push(source.key);
        storedPresent++;
      }
      decisions.push(stored === undefined ? { kind: "omit" } : { kind: "keep", entry: stored });
      continue;
    }
    if (observation.kind === "absent") {
      decisions.push({ kind: "omit" });
      continue;
    }
    present.push(source.key);
    if (stored !== undefined) storedPresent++;
    if (stored === undefined) {
      decisions.push({ kind: "introduce", value: observation });
    } else if (observation.isSameAs(stored.value)) {
      decisions.push({ kind: "keep", entry: stored });
    } else {
      const previous = observation.decodeStored(stored.value);
      if (previous === undefined) return undefined;
      decisions.push({ kind: "update", value: observation, previous: previous.value, entry: stored });
    }
  }
  const removals: string[] = [];
  const removedKeys: Key[] = [];
  const keys = Object.keys(snapshot);
  if (storedPresent === keys.length) return { decisions, removals, removedKeys };
  const isPresent = new Set(present);
  for (const key of keys.sort()) {
    if (isPresent.has(key)) continue;
    const removed = (snapshot[key] as SnapshotEntry).removed;
    if (removed === undefined) return undefined;
    removals.push(removed);
    removedKeys.push(key);
  }
  return { decisions, removals, removedKeys };
}

/**
 * Observes once and returns exactly one next action for the active snapshot. Rejects
 * `SnapshotInvalid` (before loading anything) for a snapshot `parseSnapshot` would refuse.
 */
export async function reconcile(context: SystemContext, given: Snapshot): Promise<ReconcileResult> {
  const snapshot = checkedSnapshot(given);
  return reconcileObserved(await observe(context, snapshot), snapshot);
}

/** The outcome of `replaceOrReconcile`: a fresh generation, or, while that is blocked, what reconciling decided. */
export type ReplaceOrReconcileResult =
  | { readonly kind: "replaced"; readonly generation: Generation }
  | {
      readonly kind: "replacement-blocked";
      readonly keys: readonly Key[];
      /** The epoch goes on: the next action against the snapshot, from the same observation. */
      readonly reconciled: Exclude<ReconcileResult, { readonly kind: "replaced" }>;
    };

/**
 * A due baseline-replacing transition (compaction, a model switch, a move): observes once
 * and replaces the generation; while unavailable admitted context blocks that, reconciles
 * the same observation against the snapshot instead, so the epoch goes on without a
 * second load. Rejects `SnapshotInvalid` (before loading anything) like `replace`.
 */
export async function replaceOrReconcile(context: SystemContext, given: Snapshot): Promise<ReplaceOrReconcileResult> {
  const snapshot = checkedSnapshot(given);
  const observed = await observe(context, snapshot);
  const replaced = replaceObserved(observed);
  if (replaced.kind === "replaced") return replaced;
  const reconciled = reconcileObserved(observed, snapshot);
  // Escalation replaces the same observation, which is blocked; should a renderer differ on a second call, its replacement stands.
  if (reconciled.kind === "replaced") return reconciled;
  return { kind: "replacement-blocked", keys: replaced.keys, reconciled };
}

function reconcileObserved(observed: readonly Observed[], snapshot: Snapshot): ReconcileResult {
  const planned = plan(observed, snapshot);
  if (planned === undefined) return replaceObserved(observed);

  const texts: string[] = [];
  const next: Record<Key, SnapshotEntry> = {};
  /** Keys whose entry is new (introduced or updated); every other kept entry is the very object of `snapshot`. */
  const written: Key[] = [];
  // A loop, not a callback: a closure made per call loses its optimized code at every full collection.
  for (let i = 0; i < planned.decisions.length; i++) {
    const decision = planned.decisions[i] as Decision;
    const source = (observed[i] as Observed).source;
    switch (decision.kind) {
      case "omit":
        continue;
      case "keep":
        next[source.key] = decision.entry;
        continue;
      case "introduce": {
        const admitted = admit(source, decision.value, decision.value.baseline());
        if (admitted === undefined) continue;
        texts.push(admitted.text);
        next[source.key] = admitted.entry;
        written.push(source.key);
        continue;
      }
      case "update": {
        const admitted = admit(source, decision.value, decision.value.update(decision.previous));
        if (admitted === undefined) {
          next[source.key] = decision.entry;
          continue;
        }
        texts.push(admitted.text);
        next[source.key] = admitted.entry;
        written.push(source.key);
        continue;
      }
    }
  }
  texts.push(...planned.removals);
  if (texts.length === 0) return { kind: "unchanged" };
  return {
    kind: "updated",
    text: texts.join(separator),
    snapshot: trust(next),
    change: { written, removed: planned.removedKeys },
  };
}
