// Owns the dev model: what `context-host dev` knows about its running host, kept in
// memory and announced by events, so the terminal and the browser inspector show the
// same thing. The dev command is its only writer; views only read and subscribe. A
// session is the one view of `../session-view.ts` (the inspector serves it as it is).
//
// The interface, for views (the inspector subscribes to it):
//
//   model.sessions()          every session of this dev run, oldest first (a SessionView each:
//                             id, location, provider, model, its Context Epochs with their
//                             reason, start time and Baseline, the timeline of messages with
//                             each Mid-Conversation System Message marked `isSystemUpdate`,
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
//                                                 Messages, the reply, tool results) and the request
//                                                 with its cached-prefix share
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
import {
  AdmissionTimes,
  type EpochView,
  isoTime,
  type MessageView,
  messageView,
  type RequestView,
  requestView,
  type SessionView,
} from "../session-view.ts";

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
  readonly session: { readonly session: SessionView };
  readonly boundary: {
    readonly session: SessionView;
    readonly epochStarted?: EpochView;
    readonly admitted: readonly MessageView[];
    readonly request: RequestView;
  };
  readonly plugin: { readonly plugin: DevPlugin; readonly change: "activated" | "removed" };
  readonly problem: { readonly diagnostic: Diagnostic; readonly problems: readonly Diagnostic[] };
}

export type DevModelEvent = keyof DevModelEvents;

/** What views read and subscribe to. */
export interface DevModel {
  sessions(): readonly SessionView[];
  session(id: string): SessionView | undefined;
  plugins(): readonly DevPlugin[];
  problems(): readonly Diagnostic[];
  on<E extends DevModelEvent>(event: E, listener: (payload: DevModelEvents[E]) => void): () => void;
}

interface SessionState {
  session: SessionView;
  /** The last request sent, and when. */
  lastRequest?: { readonly request: ProviderRequest; readonly at: number };
  readonly admissions: AdmissionTimes;
}

const frozenMessages = (messages: readonly StoredMessage[]): readonly MessageView[] =>
  Object.freeze(messages.map((message) => Object.freeze(messageView(message))));

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

  sessions(): readonly SessionView[] {
    return [...this.#sessions.values()].map((state) => state.session);
  }

  session(id: string): SessionView | undefined {
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
    const session: SessionView = Object.freeze({
      epoch: null,
      messageCount: 0,
      epochs: [],
      baseline: null,
      messages: [],
      snapshot: [],
      requests: [],
      ...known?.session,
      ...info,
    });
    this.#sessions.set(info.id, { ...known, session, admissions: known?.admissions ?? new AdmissionTimes() });
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
    const { number, reason, baseline } = boundary.epoch;
    const epochStarted: EpochView | undefined =
      previous.epochs.at(-1)?.number === number ? undefined : Object.freeze({ number, reason, at: isoTime(at), baseline });
    const admitted = frozenMessages(boundary.admitted);
    // The request was built in this epoch (the host's requests say so themselves).
    const sent = { request: { epoch: { number, reason }, ...boundary.request }, at };
    const request: RequestView = Object.freeze(requestView(state.lastRequest?.request, sent, previous.requests.length + 1));
    const session: SessionView = Object.freeze({
      ...previous,
      epoch: number,
      messageCount: previous.messageCount + admitted.length,
      epochs: epochStarted === undefined ? previous.epochs : Object.freeze([...previous.epochs, epochStarted]),
      baseline,
      messages: Object.freeze([...previous.messages, ...admitted]),
      snapshot: Object.freeze(state.admissions.observe(boundary.epoch, at).map((row) => Object.freeze(row))),
      requests: Object.freeze([...previous.requests, request]),
    });
    this.#sessions.set(id, { session, lastRequest: sent, admissions: state.admissions });
    const payload = { session, ...(epochStarted === undefined ? {} : { epochStarted }), admitted, request };
    this.#emit("boundary", payload);
    return payload;
  }

  /** Messages appended outside a boundary (the reply after it, a compaction summary): as the timeline shows them. */
  appendMessages(id: string, messages: readonly StoredMessage[]): readonly MessageView[] {
    const state = this.#sessions.get(id);
    if (state === undefined || messages.length === 0) return [];
    const added = frozenMessages(messages);
    state.session = Object.freeze({
      ...state.session,
      messageCount: state.session.messageCount + added.length,
      messages: Object.freeze([...state.session.messages, ...added]),
    });
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
