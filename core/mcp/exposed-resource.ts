// Owns one exposed MCP resource and what is known of it: its key and registration, whether a
// read is due (a change told since the last read began, a failure, its age), and what the
// last read admitted. Its server marks, reads and observes it only through these methods.

import type { Registration } from "../registry/registry.ts";
import { type Absent, type Key, type Unavailable, unavailable } from "../system-context/index.ts";
import type { McpResourceInfo } from "./info.ts";
import type { ResourceValue } from "./render.ts";

/** A read's admitted result: a value (or the resource's absence) and the server's `ttlMs` hint. */
export interface AdmittedRead {
  readonly value: ResourceValue | Absent;
  readonly ttlMs: number | undefined;
  /** When the read began and ended. */
  readonly startedAt: number;
  readonly endedAt: number;
}

export class ExposedResource {
  readonly key: Key;
  readonly uri: string;
  readonly registration: Registration;
  /** Counts change notifications (and reconnections); a read is due while `#readMark` differs. */
  #changedMark = 0;
  /** `#changedMark` when the last admitted read began; -1 before the first. */
  #readMark = -1;
  #value: ResourceValue | Absent | undefined;
  #readAt = 0;
  #ttlMs: number | undefined;
  #isFailing = false;
  #reading: Promise<void> | undefined;
  #readMs: number | undefined;
  #reads = 0;

  /** `register` makes the resource's registration (its source observes the resource). */
  constructor(key: Key, uri: string, register: (resource: ExposedResource) => Registration) {
    this.key = key;
    this.uri = uri;
    this.registration = register(this);
  }

  /** Whether a read runs. */
  get isReading(): boolean {
    return this.#reading !== undefined;
  }

  /** A change was told (or may have happened unseen): a read is due. */
  markChanged(): void {
    this.#changedMark++;
  }

  /**
   * Whether a read is due: after a failure or a change, else (not subscribed) once its age
   * reaches the server's `ttlMs` hint, or `maxAgeMs` without one.
   */
  isDue(isSubscribed: boolean, maxAgeMs: number, now: number): boolean {
    if (this.#isFailing || this.#readMark !== this.#changedMark) return true;
    if (isSubscribed) return false;
    return now - this.#readAt >= (this.#ttlMs ?? maxAgeMs);
  }

  /**
   * Runs `read` unless a read runs already (then joins it). `read` is given the change mark the
   * read began at, which `admit` records.
   */
  readOnce(read: (mark: number) => Promise<void>): Promise<void> {
    this.#reading ??= this.#counted(read).finally(() => {
      this.#reading = undefined;
    });
    return this.#reading;
  }

  /** What a read found, as of the change mark it began at. */
  admit(mark: number, read: AdmittedRead): void {
    this.#value = read.value;
    this.#readMark = mark;
    this.#readAt = read.endedAt;
    this.#readMs = read.endedAt - read.startedAt;
    this.#ttlMs = read.ttlMs;
    this.#isFailing = false;
  }

  /** The last read failed: the resource is unavailable, and a read is due at the next boundary. */
  fail(): void {
    this.#isFailing = true;
  }

  /** Observation (no I/O): what the last read admitted, or unavailable while failing or known to be stale. */
  observed(): ResourceValue | Absent | Unavailable {
    if (this.#isFailing || this.#readMark !== this.#changedMark) return unavailable;
    return this.#value ?? unavailable;
  }

  /** The resource, for listings. */
  info(isSubscribed: boolean): McpResourceInfo {
    return {
      key: this.key,
      uri: this.uri,
      state: this.#listedState(),
      isSubscribed,
      ...(this.#readMs === undefined ? {} : { readMs: this.#readMs }),
      reads: this.#reads,
    };
  }

  #counted(read: (mark: number) => Promise<void>): Promise<void> {
    this.#reads++;
    return read(this.#changedMark);
  }

  #listedState(): McpResourceInfo["state"] {
    if (this.#isFailing) return "failed";
    if (this.#readMark === -1) return "unread";
    if (this.#readMark !== this.#changedMark) return "changed";
    return "read";
  }
}
