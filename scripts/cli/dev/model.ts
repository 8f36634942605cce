// Owns the dev model: what `context-host dev` knows about its running host, kept in
// memory and announced by events, so the terminal and the browser inspector show the
// same thing. The dev command is its only writer; views only read and subscribe.
//
// The interface, for views (the inspector subscribes to it):
//
//   model.sessions()          every session of this dev run, oldest first (a DevSession each:
//                             id, location, provider, model, its Context Epochs with their
//                             reason, start time and Baseline, the timeline of messages with
//                             each Mid-Conversation System Message marked `role: "system-update"`,
//                             the active Context Snapshot as rows (key, value, admitted when),
//                             and per provider request the cached-prefix share)
//   model.session(id)         one of them, or undefined
//   model.plugins()           the active plugins: name, file, generation, keys, reload times
//                             (the last load's duration and every activation), current problems
//   model.problems()          the problems that still hold (the host's current diagnostics)
//   model.on(event, listener) subscribe; returns an unsubscribe function. Events:
//     "session"   { session }                     a session was created or moved/switched
//     "boundary"  { session, epochStarted?, admitted, request }
//                                                 a Safe Provider-Turn Boundary ran and its request
//                                                 was sent: the new epoch (if one began), the messages
//                                                 it appended (prompts, Mid-Conversation System
//                                                 Messages, the reply, tool results) and the request's
//                                                 cached-prefix share
//     "plugin"    { plugin, change }              a plugin generation became active, or was removed
//     "problem"   { diagnostic, problems }        a new diagnostic was reported; `problems` is
//                                                 the current list after it (a plugin that loads
//                                                 again clears its own: its "plugin" event carries
//                                                 the plugin with `problems: []`, and problems() is
//                                                 current)
//
// Every object handed out is a frozen copy-on-write value: a listener may keep it.

import { EventEmitter } from "node:events";
import type { Diagnostic, PluginInfo, PluginOrigin, ProviderRequest } from "../../../core/index.ts";
import type { EpochReason, StoredMessage } from "../../../core/store.ts";
import type { Snapshot } from "../../../core/system-context.ts";
import { type CacheFigures, cacheFigures } from "../cache-figures.ts";

/** One Context Epoch of a session. */
export interface DevEpoch {
  readonly number: number;
  readonly reason: EpochReason;
  /** When the dev host saw the epoch begin (ms since 1970). */
  readonly startedAt: number;
  /** The Baseline System Context exactly as sent. */
  readonly baseline: string;
}

/** One message of a session's timeline. */
export interface DevMessage {
  readonly seq: number;
  /** `system-update` marks a Mid-Conversation System Message. */
  readonly role: StoredMessage["role"];
  readonly text: string;
  readonly epoch: number;
  /** When the dev host saw it admitted (ms since 1970). */
  readonly at: number;
  /** Tool calls of an assistant message, by name. */
  readonly toolCalls?: readonly string[];
}

/** One admitted Context Source of the active snapshot. */
export interface DevSnapshotRow {
  readonly key: string;
  /** The admitted value (codec-encoded JSON). */
  readonly value: unknown;
  /** When this value was admitted (ms since 1970), and in which epoch. */
  readonly admittedAt: number;
  readonly epoch: number;
}

/** One provider request and how much of it the previous request's prefix covers. */
export interface DevRequest {
  readonly at: number;
  readonly epoch: number;
  /** UTF-8 bytes of the request's system parts and messages. */
  readonly bytes: number;
  /** Bytes shared with the previous request of the session, from the start (what a prompt cache can reuse). */
  readonly reusedBytes: number;
  /** `bytes - reusedBytes`. */
  readonly newBytes: number;
  /** `reusedBytes / bytes`, 0 for the first request. */
  readonly share: number;
  /** What it read from and wrote to the provider's cache on the session's model (claude-* and gpt-* models). */
  readonly cache?: CacheFigures;
}

export interface DevSession {
  readonly id: string;
  readonly location: string;
  readonly provider: string;
  readonly model: string;
  readonly epochs: readonly DevEpoch[];
  readonly messages: readonly DevMessage[];
  readonly snapshot: readonly DevSnapshotRow[];
  readonly requests: readonly DevRequest[];
}

/** One activation of a plugin generation. */
export interface DevReload {
  readonly generation: number;
  readonly at: number;
  /** How long the load took (bundle, evaluate, setup, swap). */
  readonly loadMs: number;
}

export interface DevPlugin {
  readonly name: string;
  readonly file: string;
  /** The folder or package (with its version) it was loaded from; unknown for a plugin removed before it was seen active. */
  readonly origin?: PluginOrigin;
  readonly generation: number;
  readonly keys: readonly string[];
  /** Activations of this plugin, oldest first. */
  readonly reloads: readonly DevReload[];
  /** The current problems of this plugin (by file or name). */
  readonly problems: readonly Diagnostic[];
}

export interface DevModelEvents {
  readonly session: { readonly session: DevSession };
  readonly boundary: {
    readonly session: DevSession;
    readonly epochStarted?: DevEpoch;
    readonly admitted: readonly DevMessage[];
    readonly request: DevRequest;
  };
  readonly plugin: { readonly plugin: DevPlugin; readonly change: "activated" | "removed" };
  readonly problem: { readonly diagnostic: Diagnostic; readonly problems: readonly Diagnostic[] };
}

export type DevModelEvent = keyof DevModelEvents;

/** What views read and subscribe to. */
export interface DevModel {
  sessions(): readonly DevSession[];
  session(id: string): DevSession | undefined;
  plugins(): readonly DevPlugin[];
  problems(): readonly Diagnostic[];
  on<E extends DevModelEvent>(event: E, listener: (payload: DevModelEvents[E]) => void): () => void;
}

/** Bytes two texts share from their start, in UTF-8. */
export function sharedPrefixBytes(previous: Buffer, next: Buffer): number {
  const length = Math.min(previous.length, next.length);
  let i = 0;
  while (i < length && previous[i] === next[i]) i++;
  return i;
}

/** A request as the prompt cache sees it: provider and model, then system parts, then messages, in order. */
export function requestBytes(request: ProviderRequest): Buffer {
  const parts = [JSON.stringify([request.provider, request.model]), ...request.system.map((s) => JSON.stringify(s))];
  for (const message of request.messages) parts.push(JSON.stringify(message));
  return Buffer.from(parts.join("\n"), "utf8");
}

interface SessionState {
  session: DevSession;
  lastRequest: Buffer | undefined;
  lastProviderRequest?: ProviderRequest;
}

function cacheOf(previous: ProviderRequest | undefined, next: ProviderRequest): { cache?: CacheFigures } {
  const cache = cacheFigures(previous, next);
  return cache === undefined ? {} : { cache };
}

/** The dev command's writable model. */
export class DevModelStore implements DevModel {
  readonly #events = new EventEmitter();
  readonly #sessions = new Map<string, SessionState>();
  #plugins = new Map<string, DevPlugin>();
  #problems: readonly Diagnostic[] = [];
  readonly #now: () => number;

  constructor(options: { readonly now?: () => number } = {}) {
    this.#now = options.now ?? Date.now;
    // A throwing view must not take the dev host down: listeners are called through `#emit`.
    this.#events.setMaxListeners(0);
  }

  sessions(): readonly DevSession[] {
    return [...this.#sessions.values()].map((state) => state.session);
  }

  session(id: string): DevSession | undefined {
    return this.#sessions.get(id)?.session;
  }

  plugins(): readonly DevPlugin[] {
    return [...this.#plugins.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  problems(): readonly Diagnostic[] {
    return this.#problems;
  }

  on<E extends DevModelEvent>(event: E, listener: (payload: DevModelEvents[E]) => void): () => void {
    const guarded = (payload: DevModelEvents[E]) => {
      try {
        listener(payload);
      } catch {
        // A view's fault is its own.
      }
    };
    this.#events.on(event, guarded);
    return () => this.#events.off(event, guarded);
  }

  #emit<E extends DevModelEvent>(event: E, payload: DevModelEvents[E]): void {
    this.#events.emit(event, Object.freeze(payload));
  }

  // ── writes (the dev command) ────────────────────────────────────────────

  /** A session was created, or its location, provider or model changed. */
  putSession(info: { id: string; location: string; provider: string; model: string }): void {
    const known = this.#sessions.get(info.id);
    const session: DevSession = Object.freeze({
      epochs: [],
      messages: [],
      snapshot: [],
      requests: [],
      ...known?.session,
      ...info,
    });
    this.#sessions.set(info.id, {
      session,
      lastRequest: known?.lastRequest,
      ...(known?.lastProviderRequest === undefined ? {} : { lastProviderRequest: known.lastProviderRequest }),
    });
    this.#emit("session", { session });
  }

  /**
   * A boundary ran and `request` was sent: `epoch` is the active epoch after it, `admitted`
   * the stored messages appended since the last call.
   */
  recordBoundary(
    id: string,
    boundary: {
      readonly request: ProviderRequest;
      readonly epoch: {
        readonly number: number;
        readonly reason: EpochReason;
        readonly baseline: string;
        readonly snapshot: Snapshot;
      };
      readonly admitted: readonly StoredMessage[];
    },
  ): DevModelEvents["boundary"] {
    const state = this.#sessions.get(id);
    if (state === undefined) throw new Error(`dev model: no session ${id}`);
    const at = this.#now();
    const previous = state.session;
    const isNewEpoch = previous.epochs.at(-1)?.number !== boundary.epoch.number;
    const epochStarted: DevEpoch | undefined = isNewEpoch
      ? Object.freeze({
          number: boundary.epoch.number,
          reason: boundary.epoch.reason,
          startedAt: at,
          baseline: boundary.epoch.baseline,
        })
      : undefined;
    const admitted = boundary.admitted.map(
      (message): DevMessage =>
        Object.freeze({
          seq: message.seq,
          role: message.role,
          text: message.text,
          epoch: message.epoch,
          at,
          ...(message.toolCalls === undefined ? {} : { toolCalls: message.toolCalls.map((call) => call.name) }),
        }),
    );
    const bytes = requestBytes(boundary.request);
    const reusedBytes = state.lastRequest === undefined ? 0 : sharedPrefixBytes(state.lastRequest, bytes);
    const request: DevRequest = Object.freeze({
      at,
      epoch: boundary.epoch.number,
      bytes: bytes.length,
      reusedBytes,
      newBytes: bytes.length - reusedBytes,
      share: bytes.length === 0 ? 0 : reusedBytes / bytes.length,
      ...cacheOf(state.lastProviderRequest, boundary.request),
    });
    const rows = new Map(previous.snapshot.map((row) => [row.key, row]));
    const snapshot = Object.entries(boundary.epoch.snapshot).map(([key, entry]): DevSnapshotRow => {
      const before = rows.get(key);
      const same = !isNewEpoch && before !== undefined && JSON.stringify(before.value) === JSON.stringify(entry.value);
      return same ? before : Object.freeze({ key, value: entry.value, admittedAt: at, epoch: boundary.epoch.number });
    });
    const session: DevSession = Object.freeze({
      ...previous,
      epochs: epochStarted === undefined ? previous.epochs : Object.freeze([...previous.epochs, epochStarted]),
      messages: Object.freeze([...previous.messages, ...admitted]),
      snapshot: Object.freeze(snapshot),
      requests: Object.freeze([...previous.requests, request]),
    });
    this.#sessions.set(id, { session, lastRequest: bytes, lastProviderRequest: boundary.request });
    const payload = { session, ...(epochStarted === undefined ? {} : { epochStarted }), admitted, request };
    this.#emit("boundary", payload);
    return payload;
  }

  /** Messages appended outside a boundary (the reply after it, a compaction summary). */
  appendMessages(id: string, messages: readonly StoredMessage[]): readonly DevMessage[] {
    const state = this.#sessions.get(id);
    if (state === undefined || messages.length === 0) return [];
    const at = this.#now();
    const added = messages.map(
      (message): DevMessage =>
        Object.freeze({
          seq: message.seq,
          role: message.role,
          text: message.text,
          epoch: message.epoch,
          at,
          ...(message.toolCalls === undefined ? {} : { toolCalls: message.toolCalls.map((call) => call.name) }),
        }),
    );
    state.session = Object.freeze({ ...state.session, messages: Object.freeze([...state.session.messages, ...added]) });
    return added;
  }

  /** A plugin generation became active (`info` from `host.plugins()`), or a plugin was removed. */
  recordPlugin(change: "activated", info: PluginInfo): DevPlugin;
  recordPlugin(change: "removed", info: { name: string; file: string }): DevPlugin;
  recordPlugin(change: "activated" | "removed", info: PluginInfo | { name: string; file: string }): DevPlugin {
    const known = this.#plugins.get(info.file);
    if (change === "removed") {
      const plugin: DevPlugin =
        known ?? Object.freeze({ name: info.name, file: info.file, generation: 0, keys: [], reloads: [], problems: [] });
      this.#plugins.delete(info.file);
      this.#emit("plugin", { plugin, change });
      return plugin;
    }
    const active = info as PluginInfo;
    const reload: DevReload = Object.freeze({ generation: active.generation, at: this.#now(), loadMs: active.loadMs });
    const plugin: DevPlugin = Object.freeze({
      name: active.name,
      file: active.file,
      origin: active.origin,
      generation: active.generation,
      keys: Object.freeze([...active.keys]),
      reloads: Object.freeze([...(known?.reloads ?? []), reload]),
      problems: this.#problemsOf(active.name, active.file),
    });
    this.#plugins.set(active.file, plugin);
    this.#emit("plugin", { plugin, change });
    return plugin;
  }

  /** A new diagnostic was reported; `current` is the host's current list after it. */
  recordProblem(diagnostic: Diagnostic, current: readonly Diagnostic[]): void {
    this.#setProblems(current);
    this.#emit("problem", { diagnostic, problems: this.#problems });
  }

  /** The host's current diagnostics, when they may have changed without a new one (a plugin loaded again). */
  syncProblems(current: readonly Diagnostic[]): void {
    this.#setProblems(current);
  }

  #setProblems(current: readonly Diagnostic[]): void {
    this.#problems = Object.freeze([...current]);
    const plugins = new Map<string, DevPlugin>();
    for (const [file, plugin] of this.#plugins) {
      plugins.set(file, Object.freeze({ ...plugin, problems: this.#problemsOf(plugin.name, plugin.file) }));
    }
    this.#plugins = plugins;
  }

  #problemsOf(name: string, file: string): readonly Diagnostic[] {
    return Object.freeze(this.#problems.filter((d) => d.file === file || d.plugin === name));
  }
}
