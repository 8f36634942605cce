// Owns the one commit algorithm (decision 171) as both stores run it: a commit is planned
// (commit-plan.ts) over the session's head at the revision given (as held, or read), its
// writes are applied all or nothing guarded by that revision, and what it committed is held
// from then on; a failed commit forgets what was held. Each store gives only its SQL: the
// head read and the writes applied.

import { RevisionConflict } from "../errors.ts";
import { planBoundary, planReply, planSummary, type ReplyToCommit, type SessionHead, type Writes } from "./commit-plan.ts";
import type { HeldSessions } from "./held.ts";
import type { BoundaryCommit, BoundaryCommitted, EpochRecord, ReplyCommitted } from "./store.ts";

/** Which commit a store runs, as its errors name it ("commit a boundary of session …"). */
export type CommitKind = "a boundary" | "a reply" | "a summary";

/** A session's head as read, with its active epoch when asked for. */
export interface HeadRead {
  readonly head: SessionHead;
  readonly epoch: EpochRecord | undefined;
}

/** What a store gives the commit algorithm: its SQL. */
export interface CommitSql {
  /** Session `id`'s head, and its active epoch when `withEpoch`; `SessionNotFound` when there is none. */
  readHead(kind: CommitKind, id: string, withEpoch: boolean): Promise<HeadRead>;
  /** Applies `writes` all or nothing if the session is still at `writes.revision`; else `RevisionConflict` (or `SessionNotFound`). */
  apply(kind: CommitKind, id: string, writes: Writes): Promise<void>;
}

/** The tool results a reply commit takes. */
export type ToolResults = Parameters<typeof planReply>[3];

/** A store's boundary, reply and summary commits over its SQL, holding what each committed in `held`. */
export class Commits {
  readonly #held: HeldSessions;
  readonly #sql: CommitSql;

  constructor(held: HeldSessions, sql: CommitSql) {
    this.#held = held;
    this.#sql = sql;
  }

  async boundary(id: string, revision: number, commit: BoundaryCommit): Promise<BoundaryCommitted> {
    const { writes, committed } = await this.#commit("a boundary", id, revision, true, (head, epoch) =>
      planBoundary(id, head, epoch, commit),
    );
    // Held only once committed: a rolled-back epoch must never be taken for the stored one.
    this.#held.holdEpoch(id, { number: writes.head.epoch, snapshot_version: writes.head.snapshotVersion }, committed.epoch);
    return committed;
  }

  async reply(id: string, revision: number, reply: ReplyToCommit, toolResults: ToolResults): Promise<ReplyCommitted> {
    const { appended } = await this.#commit("a reply", id, revision, false, (head) => planReply(id, head, reply, toolResults));
    return { appended };
  }

  async summary(id: string, revision: number, text: string): Promise<void> {
    await this.#commit("a summary", id, revision, false, (head) => ({ writes: planSummary(head, text) }));
  }

  /**
   * Plans a commit over the head at `revision` (the one held: a boundary's read or the last
   * commit; else read, with the active epoch when `withEpoch`) and applies its writes.
   */
  async #commit<T extends { readonly writes: Writes }>(
    kind: CommitKind,
    id: string,
    revision: number,
    withEpoch: boolean,
    plan: (head: SessionHead, epoch: EpochRecord | undefined) => T,
  ): Promise<T> {
    try {
      let read: HeadRead | undefined = this.#held.at(id, revision);
      if (read === undefined) {
        read = await this.#sql.readHead(kind, id, withEpoch);
        if (read.head.revision !== revision) throw new RevisionConflict({ sessionId: id, expected: revision });
      }
      const planned = plan(read.head, read.epoch);
      await this.#sql.apply(kind, id, planned.writes);
      this.#held.holdHead(id, planned.writes.head);
      return planned;
    } catch (error) {
      // Whatever was held may be what the failed commit was built on.
      this.#held.forget(id);
      throw error;
    }
  }
}
