// Owns the inspector's view of a running context proxy (`context-host proxy --inspect`):
// each conversation it has seen since it started, as a session — its epochs with their
// Baselines, each admitted Mid-Conversation System Message, the active Context Snapshot,
// and each request with the token usage the provider reported (cache read, written,
// uncached): the real figures, not the cache model's estimate.

import type { ContextProxy, ProxyBoundaryEvent } from "../../core/index.ts";
import { pluginViews, problemView } from "./inspector/host-source.ts";
import type { InspectorEvent, InspectorSource, ReloadView } from "./inspector/source.ts";
import {
  AdmissionTimes,
  type EpochView,
  isoTime,
  type MessageView,
  type RequestView,
  type SessionSummary,
  type SessionView,
} from "./session-view.ts";

interface Seen {
  readonly event: ProxyBoundaryEvent;
  /** When the exchange ended, ms since the Unix epoch. */
  readonly at: number;
}

/** An `InspectorSource` over a proxy: what it forwards from now on. */
export function proxyInspectorSource(proxy: ContextProxy, now: () => number = Date.now): InspectorSource {
  const sessions = new Map<string, Seen[]>();
  const admissions = new Map<string, AdmissionTimes>();
  const reloads = new Map<string, ReloadView[]>();
  const listeners = new Set<(event: InspectorEvent) => void>();
  const emit = (event: InspectorEvent) => {
    for (const listener of listeners) listener(event);
  };
  for (const plugin of proxy.engine.plugins()) reloads.set(plugin.name, [{ generation: plugin.generation, at: isoTime(now()) }]);
  proxy.engine.onPluginEvent((event) => {
    if (event.kind === "activated") {
      reloads.set(event.plugin, [...(reloads.get(event.plugin) ?? []), { generation: event.generation, at: isoTime(now()) }]);
      emit({ kind: "plugin", plugin: event.plugin });
    } else if (event.kind === "removed") {
      reloads.delete(event.plugin);
      emit({ kind: "plugin", plugin: event.plugin });
    } else emit({ kind: "problem" });
  });
  proxy.onBoundary((event) => {
    if (event.sessionId === "") return;
    const list = sessions.get(event.sessionId);
    const seen = { event, at: now() };
    if (list === undefined) sessions.set(event.sessionId, [seen]);
    else list.push(seen);
    emit({ kind: list === undefined ? "session" : "boundary", session: event.sessionId });
  });

  const summaryOf = (id: string, list: readonly Seen[]): SessionSummary => {
    const last = (list.at(-1) as Seen).event;
    const epoch = [...list].reverse().find((seen) => seen.event.epoch !== undefined)?.event.epoch?.number ?? null;
    return { id, provider: last.wire, model: last.model, location: last.location, epoch, messageCount: list.length };
  };

  return {
    sessions: () => [...sessions].map(([id, list]) => summaryOf(id, list)),
    async session(id) {
      const list = sessions.get(id);
      if (list === undefined) return undefined;
      const epochs: EpochView[] = [];
      const messages: MessageView[] = [];
      const requests: RequestView[] = [];
      list.forEach(({ event, at }, index) => {
        const number = event.epoch?.number;
        if (event.baseline !== undefined && number !== undefined) {
          epochs.push({ number, reason: event.epoch?.reason ?? "initial", at: isoTime(at), baseline: event.baseline });
        }
        if (event.update !== undefined && number !== undefined) {
          messages.push({ seq: index + 1, epoch: number, role: "system-update", text: event.update, isSystemUpdate: true });
        }
        const isFirst = index === 0;
        const extendsPrevious = !isFirst && event.baseline === undefined;
        // Within an epoch each forwarded request extends the one before it (the proxy's placement rule).
        const reusedBytes = extendsPrevious ? Math.min(event.bytes, (list[index - 1] as Seen).event.bytes) : 0;
        requests.push({
          index: index + 1,
          at: isoTime(at),
          provider: event.wire,
          model: event.model,
          epoch: number ?? null,
          bytes: event.bytes,
          reusedBytes,
          newBytes: event.bytes - reusedBytes,
          prefix: isFirst ? "first" : extendsPrevious ? "extends" : "new-epoch",
          ...(event.baseline !== undefined && !isFirst ? { reason: event.epoch?.reason ?? "" } : {}),
          ...(event.usage === undefined
            ? {}
            : {
                cache: {
                  model: event.model,
                  read: event.usage.cacheRead,
                  written: event.usage.cacheWrite,
                  uncached: event.usage.input,
                },
              }),
        });
      });
      const active = await proxy.engine.epoch(id);
      let times = admissions.get(id);
      if (times === undefined) {
        times = new AdmissionTimes();
        admissions.set(id, times);
      }
      return {
        ...summaryOf(id, list),
        epochs,
        baseline: active?.baseline ?? null,
        messages,
        snapshot: active === undefined ? [] : times.observe(active, now()),
        requests,
      } satisfies SessionView;
    },
    plugins: () => pluginViews(proxy.engine.plugins(), proxy.engine.currentDiagnostics(), reloads),
    problems: () => proxy.engine.currentDiagnostics().map(problemView),
    mcpServers: () => proxy.engine.mcpServers(),
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}
