// Owns the one way an event reaches its listeners: each in the order it subscribed, and a
// listener that throws is its own fault — the event happened, and the others still hear it.

/** The listeners of one kind of event. */
export class Listeners<Event> {
  readonly #listeners = new Set<(event: Event) => void>();

  /** Adds `listener`; returns its unsubscribe (idempotent). */
  add(listener: (event: Event) => void): () => void {
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  }

  /** Adds `listener` and tells it `current` at once (a state's subscribers start from it); returns its unsubscribe. */
  addAndTell(listener: (event: Event) => void, current: Event): () => void {
    const remove = this.add(listener);
    tell(listener, current);
    return remove;
  }

  /** Calls every listener with `event`; what one throws is ignored. */
  emit(event: Event): void {
    for (const listener of this.#listeners) tell(listener, event);
  }

  /** Whether anyone listens (so an event that costs something to build can be skipped). */
  get isEmpty(): boolean {
    return this.#listeners.size === 0;
  }

  /** Removes every listener. */
  clear(): void {
    this.#listeners.clear();
  }
}

/** Calls one listener; what it throws is its own fault. */
function tell<Event>(listener: (event: Event) => void, event: Event): void {
  try {
    listener(event);
  } catch {
    // A listener's fault is its own.
  }
}
