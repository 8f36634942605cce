// Owns `PerKeyQueue`: work run one at a time per key, in call order (a session's steps in
// the Host's runtime, a session's boundaries in the context engine).

/** Runs work one at a time per key, in call order. */
export class PerKeyQueue {
  readonly #tails = new Map<string, Promise<unknown>>();

  run<T>(key: string, work: () => Promise<T>): Promise<T> {
    const previous = this.#tails.get(key);
    // Nothing queued for the key: the work starts now, not a turn later.
    const result = previous === undefined ? work() : previous.then(work, work);
    const tail = result.catch(() => {});
    this.#tails.set(key, tail);
    void tail.then(() => {
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    });
    return result;
  }
}
