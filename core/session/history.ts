// Owns what a runtime keeps of a session's durable history between boundaries: the
// messages read so far and their projection into the active epoch. History is
// append-only, so a boundary reads only what was appended since, and a step's cost
// does not grow with the session's length beyond building the request.

import { RecentMap } from "../base/recent-map.ts";
import { projectHistory, projectMessage } from "./projection.ts";
import type { RequestMessage } from "./provider.ts";
import type { EpochRecord, SessionStore, StoredMessage } from "./store/store.ts";

/** The history of one session as this runtime last read it. */
export class SessionHistory {
  #messages: StoredMessage[] = [];
  /** The projection of `#messages` into one epoch, extended as messages are appended. */
  #projection: { epoch: EpochRecord; messages: RequestMessage[] } | undefined;

  constructor(readonly sessionId: string) {}

  /** The sequence number of the last message read (0 before any). */
  get lastSeq(): number {
    return this.#messages.at(-1)?.seq ?? 0;
  }

  get last(): StoredMessage | undefined {
    return this.#messages.at(-1);
  }

  get all(): readonly StoredMessage[] {
    return this.#messages;
  }

  /** Reads what other writers appended since the last read. */
  async refresh(store: SessionStore): Promise<void> {
    this.append(await store.messages(this.sessionId, this.lastSeq));
  }

  /**
   * Adds what its owner just read or committed; after a gap (another writer's messages
   * its owner missed) reads the whole history again from `store`.
   */
  async catchUp(appended: readonly StoredMessage[], store: SessionStore): Promise<void> {
    if (!this.append(appended)) await this.refresh(store);
  }

  /**
   * Adds messages its owner just committed (or read). A gap means a missed write: it
   * starts over, empty, and answers false (`catchUp` then reads it all).
   */
  append(appended: readonly StoredMessage[]): boolean {
    if (appended.length === 0) return true;
    if ((appended[0] as StoredMessage).seq !== this.lastSeq + 1) {
      this.#messages = [];
      this.#projection = undefined;
      return false;
    }
    for (const message of appended) this.#messages.push(message);
    const projection = this.#projection;
    if (projection === undefined) return true;
    for (const message of appended) {
      const projected = projectMessage(message, projection.epoch);
      if (projected !== undefined) projection.messages.push(Object.freeze(projected));
    }
    return true;
  }

  /** The model-visible history of `epoch`: a fresh array each call (the messages themselves are frozen and shared). */
  projected(epoch: EpochRecord): RequestMessage[] {
    const current = this.#projection;
    if (current === undefined || !isSameEpoch(current.epoch, epoch)) {
      const messages = projectHistory(this.#messages, epoch).map((message) => Object.freeze(message));
      this.#projection = { epoch, messages };
      return messages.slice();
    }
    return current.messages.slice();
  }
}

function isSameEpoch(a: EpochRecord, b: EpochRecord): boolean {
  return a.number === b.number && a.startedSeq === b.startedSeq && a.baseline === b.baseline;
}

/** Histories of the sessions a runtime stepped most recently, at most `limit` of them. */
export class SessionHistories {
  readonly #histories: RecentMap<string, SessionHistory>;

  constructor(readonly limit = 256) {
    this.#histories = new RecentMap(limit);
  }

  /** The session's history, read up to date from `store`. */
  async of(id: string, store: SessionStore): Promise<SessionHistory> {
    const history = this.held(id);
    await history.refresh(store);
    return history;
  }

  /** The session's history as held (empty if none is), not read: the caller appends what it read. */
  held(id: string): SessionHistory {
    let history = this.#histories.get(id);
    if (history === undefined) {
      history = new SessionHistory(id);
      this.#histories.set(id, history);
    }
    return history;
  }

  /** Forgets a session's history (e.g. after the store failed), so the next read starts over. */
  forget(id: string): void {
    this.#histories.delete(id);
  }
}
