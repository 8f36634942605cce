// Owns the Safe Provider-Turn Boundary's loop, for the Host's session runtime and the
// context engine alike: read the session and catch its history up, let the caller decide,
// commit what it decided, and when another writer committed first, read and decide again.
// What to decide is the caller's (`plan`); how a boundary reads, creates, commits and
// re-plans exists here once.

import { BoundaryContended, SessionNotFound } from "./errors.ts";
import type { SessionHistories, SessionHistory } from "./history.ts";
import {
  type BoundaryCommit,
  type BoundaryCommitted,
  type EpochRecord,
  type PendingPrompt,
  RevisionConflict,
  readBoundaryOf,
  type SessionRecord,
  type SessionStore,
  type SessionWhere,
} from "./store/store.ts";

/** Rounds of re-planning after another writer committed first. */
export const maxReplans = 8;

/** What one round of a boundary reads: the session as the store has it, and its history as held, caught up. */
export interface SessionState {
  readonly session: SessionRecord;
  /** The active Context Epoch; none before the first boundary. */
  readonly epoch: EpochRecord | undefined;
  readonly pending: readonly PendingPrompt[];
  readonly history: SessionHistory;
}

/** What the caller decided in one round. */
export type BoundaryRound<R> =
  /** Nothing to commit: the boundary's answer (a retry, an idle session, a blocked Baseline, a resend). */
  | { readonly kind: "answer"; readonly value: R }
  /** What was read no longer holds (a lease settled meanwhile): read and decide again. */
  | { readonly kind: "replan" }
  /** Commit this; `committed` turns the store's answer and the history caught up into the boundary's. */
  | {
      readonly kind: "commit";
      readonly commit: BoundaryCommit;
      readonly committed: (committed: BoundaryCommitted, history: SessionHistory) => R;
    };

/** A boundary's loop over one session of `store`, with the histories its owner holds. */
interface Loop<R, S> {
  readonly store: SessionStore;
  readonly histories: SessionHistories;
  readonly sessionId: string;
  /** Decides one round from what was read. */
  plan(state: S): Promise<BoundaryRound<R>>;
}

/**
 * Runs the boundary of a session that may not exist yet: `plan` sees `undefined` for a
 * missing session, and the session is created (with `newSession`) before its first commit.
 */
export function runBoundary<R>(loop: Loop<R, SessionState | undefined> & { readonly newSession: SessionWhere }): Promise<R>;
/** Runs the boundary of an existing session (`SessionNotFound` otherwise). */
export function runBoundary<R>(loop: Loop<R, SessionState>): Promise<R>;
export async function runBoundary<R>(
  loop: Loop<R, SessionState | undefined> & { readonly newSession?: SessionWhere },
): Promise<R> {
  const { store, histories, sessionId } = loop;
  const mayCreate = loop.newSession !== undefined;
  for (let round = 0; round < maxReplans; round++) {
    const state = mayCreate
      ? await readSessionIfAny(store, histories, sessionId)
      : await readSession(store, histories, sessionId);
    const planned = await loop.plan(state);
    if (planned.kind === "answer") return planned.value;
    if (planned.kind === "replan") continue;
    if (state === undefined && !(await createSession(store, histories, sessionId, loop.newSession as SessionWhere))) continue;
    let committed: BoundaryCommitted;
    try {
      committed = await store.commitBoundary(sessionId, state?.session.revision ?? 0, planned.commit);
    } catch (error) {
      if (error instanceof RevisionConflict) continue; // another writer committed first: decide again
      throw error;
    }
    const history = histories.held(sessionId);
    await history.catchUp(committed.appended, store);
    return planned.committed(committed, history);
  }
  throw new BoundaryContended({ sessionId, rounds: maxReplans });
}

/**
 * Reads what a boundary reads of a session, once: its record, active epoch, pending input
 * and what was appended to its history since its owner last read it (`SessionNotFound`
 * when there is no such session).
 */
export async function readSession(store: SessionStore, histories: SessionHistories, sessionId: string): Promise<SessionState> {
  const history = histories.held(sessionId);
  const read = await readBoundaryOf(store, sessionId, history.lastSeq);
  await history.catchUp(read.appended, store);
  return { session: read.session, epoch: read.epoch, pending: read.pending, history };
}

/** `readSession`, or `undefined` when there is no such session yet. */
export async function readSessionIfAny(
  store: SessionStore,
  histories: SessionHistories,
  sessionId: string,
): Promise<SessionState | undefined> {
  try {
    return await readSession(store, histories, sessionId);
  } catch (error) {
    if (error instanceof SessionNotFound) return undefined;
    throw error;
  }
}

/** Creates the session before its first commit; false when another writer created it first (decide again on theirs). */
async function createSession(
  store: SessionStore,
  histories: SessionHistories,
  sessionId: string,
  where: SessionWhere,
): Promise<boolean> {
  try {
    await store.createSession({ id: sessionId, ...where });
    return true;
  } catch (error) {
    const found = await readSessionIfAny(store, histories, sessionId);
    if (found !== undefined) return false;
    throw error;
  }
}
