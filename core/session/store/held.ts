// Owns what a store holds of its sessions between calls, the same in both stores: the active
// epoch as last read or committed, with the state it was at (a boundary checks two integers
// instead of reading and parsing the Baseline and snapshot), and the head as last read or
// committed (a commit at that revision needs no read). Whatever is held may be what a failed
// commit was built on: it is forgotten then.

import { SessionCorrupt } from "../errors.ts";
import type { SessionHead } from "./commit-plan.ts";
import { type EpochState, isSameState } from "./epoch-rows.ts";
import type { EpochRecord } from "./store.ts";

/** The state of the active epoch at `head`; none before the first boundary. */
export function stateAt(head: SessionHead): EpochState | undefined {
  return head.epoch === 0 ? undefined : { number: head.epoch, snapshot_version: head.snapshotVersion };
}

/** The epochs and heads a store holds, per session. */
export class HeldSessions {
  readonly #epochs = new Map<string, { state: EpochState; record: EpochRecord }>();
  readonly #heads = new Map<string, SessionHead>();

  /** The state of the epoch held for session `id`, if any. */
  epochState(id: string): EpochState | undefined {
    return this.#epochs.get(id)?.state;
  }

  /** The epoch held for session `id` while it is at `state`. */
  epochAt(id: string, state: EpochState): EpochRecord | undefined {
    const held = this.#epochs.get(id);
    return held !== undefined && isSameState(held.state, state) ? held.record : undefined;
  }

  /**
   * Session `id`'s active epoch at `state`: the one held while it is at that state, else the
   * one `read` gives, held from then on; `SessionCorrupt` when none is stored.
   */
  epoch(id: string, state: EpochState, read: (id: string, state: EpochState) => EpochRecord | undefined): EpochRecord {
    const record = this.epochAt(id, state) ?? read(id, state);
    if (record === undefined) {
      throw new SessionCorrupt({ sessionId: id, reason: `its active Context Epoch ${state.number} is not stored` });
    }
    this.#epochs.set(id, { state, record });
    return record;
  }

  /** Holds `record` as session `id`'s epoch at `state`. */
  holdEpoch(id: string, state: EpochState, record: EpochRecord): void {
    this.#epochs.set(id, { state, record });
  }

  /** The head held for session `id`, at whatever revision. */
  head(id: string): SessionHead | undefined {
    return this.#heads.get(id);
  }

  holdHead(id: string, head: SessionHead): void {
    this.#heads.set(id, head);
  }

  /** Session `id`'s head at `revision` and its active epoch, when both are held. */
  at(id: string, revision: number): { head: SessionHead; epoch: EpochRecord | undefined } | undefined {
    const head = this.#heads.get(id);
    if (head === undefined || head.revision !== revision) return undefined;
    const state = stateAt(head);
    if (state === undefined) return { head, epoch: undefined };
    const epoch = this.epochAt(id, state);
    return epoch === undefined ? undefined : { head, epoch };
  }

  forget(id: string): void {
    this.#heads.delete(id);
    this.#epochs.delete(id);
  }
}
