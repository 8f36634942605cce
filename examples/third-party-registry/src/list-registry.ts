// A Context Source registry kept as one ordered map from each active registration to the
// Scope it was made in. Every change, a batch of one or many, builds the next map from the
// last and publishes it as one version; closing a scope retires what it holds. Written from
// the public entries alone: the types from context-host/conformance, the composition from
// context-host/system-context.

import type { Batch, Registration, RegistryState, RegistryUnderTest, Scope, SourceEnv } from "context-host/conformance";
import { combine, DuplicateKeyError, type SystemContext } from "context-host/system-context";

type Listener = (state: RegistryState) => void;

/** Core registrations in the order they were made, then plugin ones by key (UTF-16 code units). */
function compositionOrder(active: Iterable<Registration>): readonly Registration[] {
  const all = [...active];
  const core = all.filter((registration) => registration.origin === "core");
  const plugin = all
    .filter((registration) => registration.origin === "plugin")
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return Object.freeze([...core, ...plugin]);
}

export class ListRegistry implements RegistryUnderTest {
  #active = new Map<Registration, Scope>();
  #state: RegistryState = Object.freeze({ version: 0, registrations: Object.freeze([]) });
  readonly #listeners = new Set<Listener>();
  /** Scopes this registry already asked to be told about when they close. */
  readonly #watched = new WeakSet<Scope>();

  get state(): RegistryState {
    return this.#state;
  }

  register(scope: Scope, registration: Registration): void {
    this.batch((batch) => batch.register(scope, registration));
  }

  unregister(registration: Registration): void {
    this.batch((batch) => batch.unregister(registration));
  }

  /** Applies every change of `changes` as one version, or none of them if one is refused. */
  batch(changes: (batch: Batch) => void): void {
    const next = new Map(this.#active);
    changes({
      register: (scope, registration) => {
        if (scope.isClosed) throw new Error(`cannot register "${registration.key}" in the closed scope ${scope.name}`);
        for (const held of next.keys()) if (held.key === registration.key) throw new DuplicateKeyError({ key: registration.key });
        next.set(registration, scope);
      },
      unregister: (registration) => {
        next.delete(registration);
      },
      retire: (scope) => {
        for (const [registration, owner] of next) if (owner === scope) next.delete(registration);
      },
    });
    for (const scope of new Set(next.values())) {
      if (this.#watched.has(scope)) continue;
      this.#watched.add(scope);
      // Closing the scope removes all it still holds then, in one version.
      void scope.add(() => {
        if ([...this.#active.values()].includes(scope)) this.batch((batch) => batch.retire(scope));
      });
    }
    const before = [...this.#active.keys()];
    const after = [...next.keys()];
    this.#active = next;
    if (before.length === after.length && before.every((registration, i) => registration === after[i])) return;
    this.#state = Object.freeze({ version: this.#state.version + 1, registrations: compositionOrder(after) });
    for (const listener of this.#listeners) listener(this.#state);
  }

  /** Tells `listener` the current state at once, then every new version. */
  subscribe(listener: Listener): () => void {
    this.#listeners.add(listener);
    listener(this.#state);
    return () => {
      this.#listeners.delete(listener);
    };
  }

  /** The System Context of one version (the current one unless given) for a boundary's env. */
  async compose(env: SourceEnv, state: RegistryState = this.#state): Promise<SystemContext> {
    return combine(await Promise.all(state.registrations.map((registration) => registration.load(env))));
  }
}
