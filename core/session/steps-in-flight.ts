// Owns how a runtime's steps end when it closes (decision 176): once closing begins no new
// step starts; the steps in flight may finish within a bound; those still running at the
// bound are abandoned: their signal aborts (their provider calls with it), and the
// sessions they were stepping are named so their leases can be released.

import { HostClosed } from "./errors.ts";

interface Running {
  readonly sessionId: string;
  /** Settles when the step does, never rejecting. */
  readonly settled: Promise<void>;
}

/** The steps (and compactions) a runtime is running, and whether it is closing. */
export class StepsInFlight {
  #isClosing = false;
  readonly #running = new Set<Running>();
  /** Aborted once, at the close's bound: every step still running is abandoned. */
  readonly #abandon = new AbortController();

  /**
   * Runs `step` for `sessionId` with a signal that aborts if the close abandons it.
   * `HostClosed` once closing has begun (not run), or as soon as the step is abandoned,
   * whether or not its provider call heeds the signal.
   */
  async run<T>(sessionId: string, step: (abandoned: AbortSignal) => Promise<T>): Promise<T> {
    if (this.#isClosing) throw new HostClosed({ sessionId, isAbandoned: false });
    const { signal } = this.#abandon;
    const done = step(signal);
    const running: Running = {
      sessionId,
      settled: done.then(
        () => {},
        () => {},
      ),
    };
    let abandon = () => {};
    const abandoned = new Promise<never>((_, reject) => {
      abandon = () => reject(new HostClosed({ sessionId, isAbandoned: true }));
    });
    signal.addEventListener("abort", abandon, { once: true });
    this.#running.add(running);
    try {
      return await Promise.race([done, abandoned]);
    } finally {
      signal.removeEventListener("abort", abandon);
      this.#running.delete(running);
    }
  }

  /**
   * Takes no new step; waits for those running until they end or `timeoutMs` pass, then
   * aborts the rest. Returns the sessions of the steps it abandoned (each once).
   */
  async close(timeoutMs: number): Promise<string[]> {
    this.#isClosing = true;
    if (this.#running.size > 0) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      // Not unref'd: a process that is closing its host waits for the bound.
      const bound = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, timeoutMs);
      });
      await Promise.race([Promise.all([...this.#running].map((running) => running.settled)), bound]);
      clearTimeout(timer);
    }
    const abandoned = [...new Set([...this.#running].map((running) => running.sessionId))];
    if (abandoned.length > 0) this.#abandon.abort(new Error(`the host closed after waiting ${timeoutMs} ms for its steps`));
    return abandoned;
  }
}
