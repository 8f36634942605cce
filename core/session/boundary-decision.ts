// Owns what a Safe Provider-Turn Boundary decides from one observation of the sources:
// the first Baseline, a new epoch when one is due, one Mid-Conversation System Message,
// or nothing; and what the session store commits for it. The Host's session runtime and
// the context engine both decide and commit here, so epochs, admission and snapshots exist
// once (decision 104).

import {
  type Generation,
  InitializationBlocked,
  initialize,
  reconcile,
  replaceOrReconcile,
  type Snapshot,
  type SnapshotChange,
  type SystemContext,
} from "../system-context/index.ts";
import type { BoundaryCommit, EpochReason, InFlightLease, PendingPrompt, SeenHistory, SessionWhere } from "./store/store.ts";

/** The one outcome of a boundary. */
export type BoundaryDecision =
  /** A new Context Epoch: its Baseline and snapshot, and why it began. */
  | { readonly kind: "new-epoch"; readonly generation: Generation; readonly reason: EpochReason }
  /** One Mid-Conversation System Message, advancing the snapshot. */
  | { readonly kind: "update"; readonly text: string; readonly snapshot: Snapshot; readonly change: SnapshotChange }
  /** Nothing to admit (or a due replacement blocked by unavailable admitted context: the epoch continues). */
  | { readonly kind: "unchanged" }
  /** The first Baseline is blocked by these unavailable core sources. */
  | { readonly kind: "blocked"; readonly keys: readonly string[] };

/**
 * What the next Safe Provider-Turn Boundary of a session would admit, decided from one
 * observation of its sources now, without admitting anything (the Host's and the
 * engine's `preview`).
 */
export type BoundaryPreview =
  /** No epoch yet, or one is due (compaction, switch, move) or needed: a new Baseline would start one. */
  | { readonly kind: "new-epoch"; readonly reason: EpochReason; readonly baseline: string; readonly snapshot: Snapshot }
  /** This Mid-Conversation System Message would be admitted, advancing the snapshot. */
  | { readonly kind: "update"; readonly text: string; readonly snapshot: Snapshot }
  /** Nothing changed: the active snapshot stays. */
  | { readonly kind: "unchanged"; readonly snapshot: Snapshot }
  /** The first Baseline is blocked by these unavailable core sources. */
  | { readonly kind: "blocked"; readonly keys: readonly string[] };

/** The preview of a decision, for a session whose active epoch is `active` (none before its first boundary). */
export function previewOf(decided: BoundaryDecision, active: { readonly snapshot: Snapshot } | undefined): BoundaryPreview {
  switch (decided.kind) {
    case "new-epoch": {
      const { baseline, snapshot } = decided.generation;
      return { kind: "new-epoch", reason: decided.reason, baseline, snapshot };
    }
    case "update":
      return { kind: "update", text: decided.text, snapshot: decided.snapshot };
    case "unchanged":
      return { kind: "unchanged", snapshot: active?.snapshot ?? {} };
    case "blocked":
      return decided;
  }
}

/**
 * Decides a boundary: without an active epoch, the first Baseline (`initial`); with one,
 * a due transition (`due`: compaction, switch, move, replacement) replaces it unless
 * unavailable admitted context blocks that, and otherwise the epoch is reconciled.
 */
export async function decideBoundary(
  context: SystemContext,
  active: { readonly snapshot: Snapshot } | undefined,
  due: EpochReason | undefined,
): Promise<BoundaryDecision> {
  if (active === undefined) {
    try {
      return { kind: "new-epoch", generation: await initialize(context), reason: "initial" };
    } catch (error) {
      if (error instanceof InitializationBlocked) return { kind: "blocked", keys: error.keys };
      throw error;
    }
  }
  // A due transition and the epoch's continuation are decided from one observation.
  let next: Awaited<ReturnType<typeof reconcile>>;
  if (due !== undefined) {
    const decided = await replaceOrReconcile(context, active.snapshot);
    if (decided.kind === "replaced") return { kind: "new-epoch", generation: decided.generation, reason: due };
    // Blocked by unavailable admitted context: the epoch continues.
    next = decided.reconciled;
  } else {
    next = await reconcile(context, active.snapshot);
  }
  switch (next.kind) {
    case "unchanged":
    case "replacement-blocked":
      return { kind: "unchanged" };
    case "updated":
      return { kind: "update", text: next.text, snapshot: next.snapshot, change: next.change };
    case "replaced":
      return { kind: "new-epoch", generation: next.generation, reason: due ?? "replacement" };
  }
}

/** What a boundary commits besides its decision: the Host's promoted input and lease, or the engine's view of its caller. */
export interface BoundaryExtras {
  /** Pending prompts promoted into history (the Host's). */
  readonly promote?: readonly PendingPrompt[];
  /** The host system prompt a new epoch begins with (the Host's; none for the engine). */
  readonly systemPrompt?: string | null;
  /** The lease of the provider call that follows (the Host's). */
  readonly lease?: InFlightLease;
  /** The caller's history as seen (the engine's). */
  readonly seen?: SeenHistory;
  /** Where the session runs from a new epoch on (the engine's: its caller says where each call runs). */
  readonly where?: SessionWhere;
}

/** The store commit of a decision that is not blocked: one for the Host's sessions and the engine's. */
export function boundaryCommit(decided: Exclude<BoundaryDecision, { kind: "blocked" }>, extras: BoundaryExtras): BoundaryCommit {
  const common = {
    promote: extras.promote ?? [],
    ...(extras.lease === undefined ? {} : { lease: extras.lease }),
    ...(extras.seen === undefined ? {} : { seen: extras.seen }),
  };
  switch (decided.kind) {
    case "new-epoch":
      return {
        ...common,
        newEpoch: {
          ...decided.generation,
          reason: decided.reason,
          systemPrompt: extras.systemPrompt ?? null,
          ...(extras.where === undefined ? {} : { where: extras.where }),
        },
        settlesEpochDue: true,
      };
    case "update":
      return {
        ...common,
        systemUpdate: { text: decided.text, snapshot: decided.snapshot, change: decided.change },
        settlesEpochDue: false,
      };
    case "unchanged":
      return { ...common, settlesEpochDue: false };
  }
}
