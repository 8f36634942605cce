// Owns the one bounded cache the code keeps of what it saw lately (sessions' histories, source
// envs, folders, model placements): a map of at most `limit` entries, the least recently used
// leaving first when another comes in.

/** A map that keeps the `limit` most recently used entries. */
export class RecentMap<K, V> {
  readonly #entries = new Map<K, V>();
  readonly #limit: number;

  constructor(limit: number) {
    this.#limit = limit;
  }

  /** The value of `key`, which becomes the most recently used; `undefined` when not kept. */
  get(key: K): V | undefined {
    const value = this.#entries.get(key);
    if (value !== undefined) {
      this.#entries.delete(key);
      this.#entries.set(key, value);
    }
    return value;
  }

  /** Keeps `value` as the most recently used, letting the least recently used go beyond the limit. */
  set(key: K, value: V): void {
    this.#entries.delete(key);
    this.#entries.set(key, value);
    if (this.#entries.size > this.#limit) this.#entries.delete(this.#entries.keys().next().value as K);
  }

  delete(key: K): void {
    this.#entries.delete(key);
  }

  get size(): number {
    return this.#entries.size;
  }
}
