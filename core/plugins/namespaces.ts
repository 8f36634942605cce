// Owns namespace ownership: which plugin file holds each plugin name. Two files that
// declare the same name compete; the path that sorts first keeps it, whatever the order
// they loaded in, and a file that lost its namespace is revived when the holder lets go.

/** Orders text by UTF-16 code units, as plugin names and paths sort everywhere in the set. */
export const compareText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

export type Claim =
  /** `file` holds the name now; `displaced` is the file that held it before, if another did. */
  | { readonly kind: "granted"; readonly displaced: string | undefined }
  /** Another file holds the name and keeps it: its path sorts first. */
  | { readonly kind: "refused"; readonly holder: string };

export class Namespaces {
  /** Plugin name → the file holding it. */
  readonly #holders = new Map<string, string>();
  /** File that lost its namespace → the file it lost it to. */
  readonly #displaced = new Map<string, string>();

  /**
   * Whether `file` may hold `name`, given who holds it now; a refused file waits until the holder
   * lets go.
   */
  check(name: string, file: string): Claim {
    const holder = this.#holders.get(name);
    if (holder === undefined || holder === file) return { kind: "granted", displaced: undefined };
    if (compareText(holder, file) >= 0) return { kind: "granted", displaced: holder };
    this.#displaced.set(file, holder);
    return { kind: "refused", holder };
  }

  /** `file` holds `name` now: the swap `check` granted is done. */
  hold(name: string, file: string, displaced: string | undefined): void {
    for (const [held, holder] of this.#holders) {
      if (holder === file && held !== name) this.#holders.delete(held);
    }
    this.#holders.set(name, file);
    this.#displaced.delete(file);
    if (displaced !== undefined) this.#displaced.set(displaced, file);
  }

  /** `file` holds no namespace any more; returns the files that lost theirs to it. */
  release(file: string): string[] {
    for (const [name, holder] of this.#holders) {
      if (holder === file) this.#holders.delete(name);
    }
    this.#displaced.delete(file);
    return this.takeWaiters(file);
  }

  /** The files that lost their namespace to `file`, which let go of it: they try again. */
  takeWaiters(file: string): string[] {
    const waiting = [...this.#displaced].filter(([, to]) => to === file).map(([waiter]) => waiter);
    for (const waiter of waiting) this.#displaced.delete(waiter);
    return waiting;
  }
}
