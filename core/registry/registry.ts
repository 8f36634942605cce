// Owns the scoped, replayable registry of Context Source registrations. Core
// registrations keep the host's order; plugin-defined ones follow in lexicographic
// key order, so composition depends only on the set of active registrations.

import { ContextHostError } from "../base/errors.ts";
import { Listeners } from "../base/listeners.ts";
import type { Scope } from "../base/scope.ts";
import { combine, DuplicateKeyError, type Key, type SystemContext } from "../system-context/index.ts";

/** What a registration's loader is told about the boundary it serves. */
export interface SourceEnv {
  /** The session's location (working folder) at this boundary. */
  readonly location: string;
  /** The session whose boundary this is (absent when rendering outside a session). */
  readonly sessionId?: string;
}

/** One registered Context Source: a key and how to produce its `SystemContext` for a boundary. */
export interface Registration {
  readonly key: Key;
  /** `core` registrations come first in host order; `plugin` ones after, sorted by key. */
  readonly origin: "core" | "plugin";
  load(env: SourceEnv): SystemContext | Promise<SystemContext>;
}

/** One consistent version of the registry: the active registrations in composition order. */
export interface RegistryState {
  readonly version: number;
  readonly registrations: readonly Registration[];
}

/** Changes made together, published as one version. */
export interface Batch {
  register(scope: Scope, registration: Registration): void;
  unregister(registration: Registration): void;
  /** Removes every registration made in `scope` (what closing it would remove), in this version. */
  retire(scope: Scope): void;
}

type Listener = (state: RegistryState) => void;

/** `batch` was called from inside a batch's changes. */
export class RegistryBatchNested extends ContextHostError {
  constructor() {
    super("registry batches do not nest: make every change of one version inside one batch");
  }
}

/** A registration was made in a scope already closed (or closing); names the key and the scope. */
export class RegistrationScopeClosed extends ContextHostError {
  readonly key: Key;
  readonly scope: string;
  constructor(options: { readonly key: Key; readonly scope: string }) {
    super(`cannot register "${options.key}" in a closed scope (${options.scope})`);
    this.key = options.key;
    this.scope = options.scope;
  }
}

/** Lexicographic by UTF-16 code units, as `Array.prototype.sort` compares strings. */
function byKey(a: Registration, b: Registration): number {
  return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
}

export class Registry {
  #core: Registration[] = [];
  #plugin: Registration[] = [];
  #state: RegistryState = { version: 0, registrations: [] };
  readonly #listeners = new Listeners<RegistryState>();
  /**
   * The registrations each scope holds. The registry is their one owner: a scope's close,
   * and a swap that retires the scope inside a batch, both remove them through here.
   */
  readonly #byScope = new Map<Scope, Set<Registration>>();
  #batching = false;

  /** The current version. A boundary reads it once and composes from it. */
  get state(): RegistryState {
    return this.#state;
  }

  /** Registers inside `scope`; closing the scope removes it, with the scope's other registrations, in one version. */
  register(scope: Scope, registration: Registration): void {
    this.batch((batch) => batch.register(scope, registration));
  }

  /** Removes a registration by identity; removing one that is not active does nothing. */
  unregister(registration: Registration): void {
    this.batch((batch) => batch.unregister(registration));
  }

  /** Removes every registration made in `scope`; what closing the scope does first. */
  retire(scope: Scope): void {
    this.batch((batch) => batch.retire(scope));
  }

  /**
   * Applies several changes as one version: subscribers and boundaries never see
   * half of them. If any change is invalid (a duplicate key), none is applied.
   */
  batch(changes: (batch: Batch) => void): void {
    if (this.#batching) throw new RegistryBatchNested();
    const core = this.#core.slice();
    const plugin = this.#plugin.slice();
    const scoped: Array<[Scope, Registration]> = [];
    const removed = new Set<Registration>();
    const remove = (registration: Registration) => {
      for (const list of [core, plugin]) {
        const at = list.indexOf(registration);
        if (at >= 0) {
          list.splice(at, 1);
          removed.add(registration);
        }
      }
    };
    this.#batching = true;
    try {
      changes({
        register: (scope, registration) => {
          if (scope.isClosed) throw new RegistrationScopeClosed({ key: registration.key, scope: scope.name });
          if (core.some((r) => r.key === registration.key) || plugin.some((r) => r.key === registration.key)) {
            throw new DuplicateKeyError({ key: registration.key });
          }
          (registration.origin === "core" ? core : plugin).push(registration);
          scoped.push([scope, registration]);
        },
        unregister: remove,
        retire: (scope) => {
          for (const registration of this.#byScope.get(scope) ?? []) remove(registration);
          for (const [owner, registration] of scoped) if (owner === scope) remove(registration);
        },
      });
    } finally {
      this.#batching = false;
    }
    const changed =
      core.length !== this.#core.length ||
      plugin.length !== this.#plugin.length ||
      core.some((r, i) => r !== this.#core[i]) ||
      plugin.some((r, i) => r !== this.#plugin[i]);
    for (const [scope, held] of this.#byScope) {
      for (const registration of held) if (removed.has(registration)) held.delete(registration);
      if (held.size === 0) this.#byScope.delete(scope);
    }
    const added = new Set<Scope>();
    for (const [scope, registration] of scoped) {
      if (removed.has(registration)) continue;
      let held = this.#byScope.get(scope);
      if (held === undefined) {
        held = new Set();
        this.#byScope.set(scope, held);
      }
      held.add(registration);
      added.add(scope);
    }
    for (const scope of added) {
      // Closing the scope retires all it holds as one version: the newest of these disposers
      // does it (before anything the scope took earlier is released); the others, and any
      // after a batch retired the scope, find nothing and publish nothing.
      void scope.add(() => {
        if (this.#byScope.has(scope)) this.retire(scope);
      });
    }
    if (!changed) return;
    plugin.sort(byKey);
    this.#core = core;
    this.#plugin = plugin;
    this.#state = Object.freeze({
      version: this.#state.version + 1,
      registrations: Object.freeze([...core, ...plugin]),
    });
    this.#listeners.emit(this.#state);
  }

  /** Delivers the current state at once, then every change in order. Returns an unsubscribe. */
  subscribe(listener: Listener): () => void {
    return this.#listeners.addAndTell(listener, this.#state);
  }

  /** Composes one version (the current one by default) into a System Context for a boundary. */
  async compose(env: SourceEnv, state: RegistryState = this.#state): Promise<SystemContext> {
    const { registrations } = state;
    const last = this.#lastComposed.get(state);
    const loaded: Array<SystemContext | Promise<SystemContext>> = new Array(registrations.length);
    let isPending = false;
    let isSame = last !== undefined && last.contexts.length === registrations.length;
    for (let i = 0; i < registrations.length; i++) {
      const context = (registrations[i] as Registration).load(env);
      loaded[i] = context;
      if (isThenable(context)) isPending = true;
      else if (isSame && last?.contexts[i] !== context) isSame = false;
    }
    // Sources built once per env load synchronously (no promise per source then), and the same
    // contexts as the last composition of this version combine to the same System Context.
    if (!isPending && isSame && last !== undefined) return last.composed;
    const contexts = isPending ? await Promise.all(loaded) : (loaded as SystemContext[]);
    const composed = combine(contexts);
    this.#lastComposed.set(state, { contexts, composed });
    return composed;
  }

  /** Per version, the last composition: its contexts and what they combined to. */
  readonly #lastComposed = new WeakMap<RegistryState, { contexts: readonly SystemContext[]; composed: SystemContext }>();
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as { then?: unknown } | null)?.then === "function";
}
