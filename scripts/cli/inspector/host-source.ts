// Owns `hostInspectorSource`: an `InspectorSource` read from a real host, its store and
// a record of the requests its providers were sent. The Host API has no epochs or
// snapshots, so the store is read for those; when things happened (epoch starts,
// admissions, reloads) is what this adapter saw happen, from the moment it was made.

import {
  type Diagnostic,
  formatOrigin,
  type Host,
  type PluginInfo,
  type Provider,
  type ProviderRequest,
} from "../../../core/index.ts";
import type { EpochRecord, SessionStore, StoredMessage } from "../../../core/store.ts";
import {
  AdmissionTimes,
  type EpochView,
  isoTime,
  messageView,
  requestViews,
  type SessionSummary,
  type SessionView,
  type SnapshotRow,
} from "../session-view.ts";
import type { InspectorEvent, InspectorSource, PluginView, ProblemView, ReloadView } from "./source.ts";

/** A request a provider was sent, and when. */
export interface RecordedRequest {
  readonly request: ProviderRequest;
  /** ms since the Unix epoch. */
  readonly at: number;
}

/** Records every request the wrapped providers are sent, in order. */
export interface RequestRecorder {
  readonly requests: readonly RecordedRequest[];
  /** The same provider, recording each request before sending it. */
  wrap(provider: Provider): Provider;
  /** Calls `listener` with each request as it is recorded (before the provider answers); returns the unsubscribe. */
  onRequest(listener: (recorded: RecordedRequest) => void): () => void;
  /** Stops recording (a recorder fed by events). */
  close?(): void;
}

/** A `RequestRecorder` with its own clock (ms since the Unix epoch). */
export function requestRecorder(now: () => number = Date.now): RequestRecorder {
  const requests: RecordedRequest[] = [];
  const listeners = new Set<(recorded: RecordedRequest) => void>();
  return {
    requests,
    wrap: (provider) => ({
      send(request, options) {
        const recorded = { request: structuredClone(request) as ProviderRequest, at: now() };
        requests.push(recorded);
        for (const listener of listeners) listener(recorded);
        return provider.send(request, options);
      },
    }),
    onRequest(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}

export interface HostInspectorSourceOptions {
  readonly host: Host;
  /** The store the host was created with (`createHost({ store })`): epochs and snapshots are read from it. */
  readonly store: SessionStore;
  /**
   * Where the requests come from: by default the host's own `onBoundary` events (each
   * request once its reply is stored); a recorder whose wrapped providers the host was given
   * sees each one as it is sent.
   */
  readonly recorder?: RequestRecorder;
  /** ms since the Unix epoch (default `Date.now`). */
  readonly now?: () => number;
}

/** An `InspectorSource` over a host, with the host to drive so that changes are announced. */
export interface HostInspectorSource extends InspectorSource {
  /**
   * The same host, announcing each change: a created session, a committed boundary, reply
   * or transition. Drive the sessions through it (or call `track`).
   */
  readonly host: Host;
  /** Adds a session the inspector did not see created (one resumed from the store). */
  track(id: string): Promise<void>;
  /** Stops listening to the host and the recorder. */
  close(): void;
}

/** What this adapter saw of one session. */
interface Watched {
  /** The active epoch when last read, and when it was first seen. */
  epoch: number | undefined;
  readonly epochStarts: Map<number, number>;
  /** When each value of the active snapshot was first seen admitted. */
  readonly admissions: AdmissionTimes;
  /** The active snapshot's rows when last read. */
  snapshot: readonly SnapshotRow[];
}

/** A recorder fed by the host's public `onBoundary` events: no provider is wrapped. */
function boundaryRecorder(host: Host, now: () => number): RequestRecorder & { close(): void } {
  const requests: RecordedRequest[] = [];
  const listeners = new Set<(recorded: RecordedRequest) => void>();
  const off = host.onBoundary((event) => {
    if (event.request === undefined) return;
    const recorded = { request: event.request, at: now() };
    requests.push(recorded);
    for (const listener of listeners) listener(recorded);
  });
  return {
    requests,
    wrap: (provider) => provider,
    onRequest(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    close: off,
  };
}

/** An `InspectorSource` built from a real host (see `HostInspectorSourceOptions`). */
export function hostInspectorSource(options: HostInspectorSourceOptions): HostInspectorSource {
  const { host, store } = options;
  const now = options.now ?? Date.now;
  const recorder = options.recorder ?? boundaryRecorder(host, now);
  const listeners = new Set<(event: InspectorEvent) => void>();
  const watched = new Map<string, Watched>();
  const reloads = new Map<string, ReloadView[]>();
  const iso = isoTime;

  const emit = (event: InspectorEvent) => {
    for (const listener of listeners) listener(event);
  };

  for (const plugin of host.plugins()) reloads.set(plugin.name, [{ generation: plugin.generation, at: iso(now()) }]);

  const offPlugins = host.onPluginEvent((event) => {
    if (event.kind === "activated") {
      const list = reloads.get(event.plugin) ?? [];
      reloads.set(event.plugin, [...list, { generation: event.generation, at: iso(now()) }]);
      emit({ kind: "plugin", plugin: event.plugin });
      // A plugin that loads again clears its earlier problems.
      emit({ kind: "problem" });
    } else if (event.kind === "removed") {
      reloads.delete(event.plugin);
      emit({ kind: "plugin", plugin: event.plugin });
      emit({ kind: "problem" });
    } else {
      emit({ kind: "problem" });
    }
  });

  /** Reads the active epoch and notes what is new since the last read: an epoch start, admitted values. */
  async function observe(id: string): Promise<EpochRecord | undefined> {
    let seen = watched.get(id);
    if (seen === undefined) {
      seen = { epoch: undefined, epochStarts: new Map(), admissions: new AdmissionTimes(), snapshot: [] };
      watched.set(id, seen);
    }
    const active = await store.activeEpoch(id);
    if (active === undefined) return undefined;
    const at = now();
    if (seen.epoch !== active.number) {
      if (!seen.epochStarts.has(active.number)) seen.epochStarts.set(active.number, at);
      seen.epoch = active.number;
    }
    seen.snapshot = seen.admissions.observe(active, at);
    return active;
  }

  const announce = async (id: string) => {
    await observe(id).catch(() => undefined);
    emit({ kind: "boundary", session: id });
  };

  const offRequests = recorder.onRequest((recorded) => {
    const id = recorded.request.sessionId;
    if (id === undefined) return;
    const isNew = !watched.has(id);
    void announce(id).then(() => {
      if (isNew) emit({ kind: "session", session: id });
    });
  });

  /** Runs a host call, then announces the session's change whether it succeeded or not. */
  async function announcing<T>(id: string, run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } finally {
      await announce(id);
    }
  }

  const announcingHost: Host = {
    async createSession(session) {
      const id = await host.createSession(session);
      await observe(id);
      emit({ kind: "session", session: id });
      return id;
    },
    prompt: (id, text) => host.prompt(id, text),
    step: (id, options) => announcing(id, () => host.step(id, options)),
    messages: (id) => host.messages(id),
    preview: (id) => host.preview(id),
    epoch: (id) => host.epoch(id),
    compact: (id) => announcing(id, () => host.compact(id)),
    switchModel: (id, change) => announcing(id, () => host.switchModel(id, change)),
    move: (id, location) => announcing(id, () => host.move(id, location)),
    plugins: () => host.plugins(),
    mcpServers: () => host.mcpServers(),
    get diagnostics() {
      return host.diagnostics;
    },
    currentDiagnostics: () => host.currentDiagnostics(),
    onPluginEvent: (listener) => host.onPluginEvent(listener),
    onBoundary: (listener) => host.onBoundary(listener),
    close: () => host.close(),
  };

  const requestsOf = (id: string) => recorder.requests.filter((recorded) => recorded.request.sessionId === id);

  async function summaryOf(id: string): Promise<SessionSummary | undefined> {
    const record = await store.session(id).catch(() => undefined);
    if (record === undefined) return undefined;
    const [messages, active] = await Promise.all([store.messages(id), store.activeEpoch(id)]);
    return {
      id,
      provider: record.provider,
      model: record.model,
      location: record.location,
      epoch: active?.number ?? null,
      messageCount: messages.length,
    };
  }

  return {
    host: announcingHost,

    async sessions() {
      const summaries = await Promise.all([...watched.keys()].map(summaryOf));
      return summaries.filter((summary) => summary !== undefined);
    },

    async session(id) {
      const summary = await summaryOf(id);
      if (summary === undefined) return undefined;
      const [messages, active] = await Promise.all([host.messages(id), observe(id)]);
      const seen = watched.get(id);
      const requests = requestsOf(id);
      return {
        ...summary,
        epochs: epochsOf(messages, requests, active, seen?.epochStarts ?? new Map(), iso),
        baseline: active?.baseline ?? null,
        messages: messages.map(messageView),
        snapshot: active === undefined ? [] : (seen?.snapshot ?? []),
        requests: requestViews(requests),
      } satisfies SessionView;
    },

    plugins: () => pluginViews(host.plugins(), host.currentDiagnostics(), reloads),

    problems: () => host.currentDiagnostics().map(problemView),

    mcpServers: () => host.mcpServers(),

    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },

    async track(id) {
      const isNew = !watched.has(id);
      await observe(id);
      if (isNew) emit({ kind: "session", session: id });
    },

    close() {
      offPlugins();
      offRequests();
      recorder.close?.();
      listeners.clear();
    },
  };
}

/** The epochs a session went through: every number its messages, requests or store name. */
function epochsOf(
  messages: readonly StoredMessage[],
  requests: readonly RecordedRequest[],
  active: EpochRecord | undefined,
  starts: ReadonlyMap<number, number>,
  iso: (ms: number) => string,
): EpochView[] {
  const numbers = new Set<number>(messages.map((m) => m.epoch));
  for (const recorded of requests) if (recorded.request.epoch !== undefined) numbers.add(recorded.request.epoch.number);
  if (active !== undefined) numbers.add(active.number);
  return [...numbers]
    .sort((a, b) => a - b)
    .map((number): EpochView => {
      const first = requests.find((recorded) => recorded.request.epoch?.number === number);
      const isActive = active?.number === number;
      const start = first?.at ?? starts.get(number);
      return {
        number,
        reason: isActive ? active.reason : (first?.request.epoch?.reason ?? "unknown"),
        at: start === undefined ? null : iso(start),
        baseline: isActive ? active.baseline : (first?.request.system.at(-1) ?? null),
      };
    });
}

/** The active plugins as the plugins table shows them, each with its reloads seen and its current problems. */
export function pluginViews(
  plugins: readonly PluginInfo[],
  diagnostics: readonly Diagnostic[],
  reloads: ReadonlyMap<string, readonly ReloadView[]>,
): PluginView[] {
  const problems = diagnostics.map(problemView);
  return plugins.map(
    (plugin): PluginView => ({
      name: plugin.name,
      file: plugin.file,
      origin: formatOrigin(plugin.origin, process.cwd()),
      files: [plugin.file],
      generation: plugin.generation,
      keys: [...plugin.keys],
      reloads: reloads.get(plugin.name) ?? [],
      problems: problems.filter((problem) => problem.plugin === plugin.name || problem.file === plugin.file),
    }),
  );
}

/** A diagnostic as the problems list shows it. */
export function problemView(diagnostic: Diagnostic): ProblemView {
  return {
    plugin: diagnostic.plugin,
    file: diagnostic.file,
    ...(diagnostic.line === undefined ? {} : { line: diagnostic.line }),
    ...(diagnostic.column === undefined ? {} : { column: diagnostic.column }),
    ...(diagnostic.key === undefined ? {} : { key: diagnostic.key }),
    phase: diagnostic.phase,
    message: diagnostic.message,
    ...(diagnostic.lineText === undefined ? {} : { lineText: diagnostic.lineText }),
  };
}
