// Owns the Scope: a store of disposers whose owner closes it once. It is how a
// plugin generation, a watcher or a host says "these resources live and die together".

import { DisposersFailed } from "./errors.ts";

/** Something that releases a resource; may be async. */
export type Disposer = () => void | Promise<void>;

/**
 * A store of disposers. `close()` runs them in reverse order of addition, one at a
 * time, each awaited and each exactly once; it is idempotent and resolves only after
 * every disposer finished. Their errors are collected into one `DisposersFailed` (`.errors`).
 * Adding to a closed (or closing) scope disposes the new resource at once.
 */
export class Scope {
  readonly #disposers: Disposer[] = [];
  #closing: Promise<void> | undefined;

  constructor(readonly name = "scope") {}

  /** Whether `close()` has been called. */
  get isClosed(): boolean {
    return this.#closing !== undefined;
  }

  /**
   * Adds a disposer. On a closed scope it runs at once; the returned promise settles
   * when it has (and rejects with its error); on an open scope it resolves at once.
   */
  add(disposer: Disposer): Promise<void> {
    if (this.#closing === undefined) {
      this.#disposers.push(disposer);
      return Promise.resolve();
    }
    return (async () => {
      await disposer();
    })();
  }

  /** Runs every disposer once, newest first. Idempotent. */
  close(): Promise<void> {
    this.#closing ??= this.#runDisposers();
    return this.#closing;
  }

  async #runDisposers(): Promise<void> {
    const errors: unknown[] = [];
    while (this.#disposers.length > 0) {
      const disposer = this.#disposers.pop() as Disposer;
      try {
        await disposer();
      } catch (error) {
        errors.push(error);
      }
    }
    if (errors.length > 0) throw new DisposersFailed({ scope: this.name, errors });
  }
}
