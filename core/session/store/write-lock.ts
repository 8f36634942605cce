// Owns waiting for another process's SQLite write lock without holding the event loop
// (decision 175): SQLite's own busy handler sleeps the thread, so it is given only a few
// milliseconds per try; between tries the wait goes on in timers, and the host's other
// sessions are served meanwhile.

import { setTimeout as sleep } from "node:timers/promises";

/** Milliseconds SQLite's busy handler may block the thread per try: a connection's `busy_timeout`. */
export const busyTryMs = 5;

/** Pauses between tries (ms), growing to the last one: short locks are caught soon, long ones cost few tries. */
const pauses = [1, 2, 5, 10, 20, 25, 50];

/** Whether SQLite refused because another connection holds the lock (`SQLITE_BUSY` and its extended codes). */
export function isWriteLockBusy(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" && (code === "SQLITE_BUSY" || code.startsWith("SQLITE_BUSY_"));
}

/**
 * Runs `write` now, and again after a pause each time it fails because another connection
 * holds the write lock, until `boundMs` have passed; then rethrows that failure. `write`
 * must be one that writes nothing when it is refused: a statement, or a transaction that
 * takes the lock first (`BEGIN IMMEDIATE`). The first try runs before this returns, so
 * writes that meet no lock keep their order.
 */
export async function waitForWriteLock<T>(write: () => T, boundMs: number): Promise<T> {
  const startedAt = performance.now();
  for (let tries = 0; ; tries++) {
    try {
      return write();
    } catch (error) {
      if (!isWriteLockBusy(error)) throw error;
      const left = boundMs - (performance.now() - startedAt);
      if (left <= 0) throw error;
      await sleep(Math.min(pauses[Math.min(tries, pauses.length - 1)] as number, left));
    }
  }
}
