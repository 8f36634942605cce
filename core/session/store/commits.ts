// Owns running the one commit algorithm (decision 171) the same in both stores: each store
// gives a session's head at a revision and applies a commit's writes in its own SQL, all or
// nothing; what is planned (commit-plan.ts) and what is held once committed are written here.

import { planBoundary, planReply, planSummary, type ReplyToCommit, type SessionHead, type Writes } from "./commit-plan.ts";
import type { HeldSessions } from "./held.ts";
import type { BoundaryCommit, BoundaryCommitted, EpochRecord, ReplyCommitted } from "./store.ts";

/** Which commit a store runs, as its errors name it ("commit a boundary of session …"). */
export type CommitKind = "a boundary" | "a reply" | "a summary";

/**
 * How a store runs one commit: `plan` over session `id`'s head at `revision` (else
 * `RevisionConflict`, or `SessionNotFound`) and its active epoch (read only when `active`
 * is called), then the writes planned applied all or nothing, guarded by that revision.
 */
export type RunCommit = <T extends { readonly writes: Writes }>(
  kind: CommitKind,
  id: string,
  revision: number,
  plan: (head: SessionHead, active: () => EpochRecord | undefined) => T,
) => Promise<T>;

/** The tool results a reply commit takes. */
export type ToolResults = Parameters<typeof planReply>[3];

/** A store's boundary, reply and summary commits over its `RunCommit`, holding what each committed in `held`. */
export class Commits {
  readonly #held: HeldSessions;
  readonly #run: RunCommit;

  constructor(held: HeldSessions, run: RunCommit) {
    this.#held = held;
    this.#run = run;
  }

  async boundary(id: string, revision: number, commit: BoundaryCommit): Promise<BoundaryCommitted> {
    const { writes, committed } = await this.#commit("a boundary", id, revision, (head, active) =>
      planBoundary(id, head, active(), commit),
    );
    // Held only once committed: a rolled-back epoch must never be taken for the stored one.
    this.#held.holdEpoch(id, { number: writes.head.epoch, snapshot_version: writes.head.snapshotVersion }, committed.epoch);
    return committed;
  }

  async reply(id: string, revision: number, reply: ReplyToCommit, toolResults: ToolResults): Promise<ReplyCommitted> {
    const { appended } = await this.#commit("a reply", id, revision, (head) => planReply(id, head, reply, toolResults));
    return { appended };
  }

  async summary(id: string, revision: number, text: string): Promise<void> {
    await this.#commit("a summary", id, revision, (head) => ({ writes: planSummary(head, text) }));
  }

  async #commit<T extends { readonly writes: Writes }>(
    kind: CommitKind,
    id: string,
    revision: number,
    plan: (head: SessionHead, active: () => EpochRecord | undefined) => T,
  ): Promise<T> {
    try {
      const planned = await this.#run(kind, id, revision, plan);
      this.#held.holdHead(id, planned.writes.head);
      return planned;
    } catch (error) {
      // Whatever was held may be what the failed commit was built on.
      this.#held.forget(id);
      throw error;
    }
  }
}
