// Owns the adapter from the dev host's in-memory model (`DevModel`) to the browser
// inspector's read interface (`InspectorSource`): the page shows what the terminal
// session learned, with the same times, Baselines and cached-prefix figures.

import { type Diagnostic, formatOrigin } from "../../../core/index.ts";
import type {
  InspectorEvent,
  InspectorSource,
  McpServerView,
  ProblemView,
  RequestView,
  SessionSummary,
  SessionView,
} from "../inspector/source.ts";
import type { DevModel, DevSession } from "./model.ts";

const iso = (ms: number) => new Date(ms).toISOString();

function problemOf(diagnostic: Diagnostic): ProblemView {
  return { ...diagnostic };
}

function summaryOf(session: DevSession): SessionSummary {
  const active = session.epochs.at(-1);
  return {
    id: session.id,
    provider: session.provider,
    model: session.model,
    location: session.location,
    epoch: active === undefined ? null : active.number,
    messageCount: session.messages.length,
  };
}

function requestsOf(session: DevSession): RequestView[] {
  return session.requests.map((request, i) => {
    const previous = i === 0 ? undefined : session.requests[i - 1];
    const epoch = session.epochs.find((e) => e.number === request.epoch);
    let prefix: RequestView["prefix"];
    if (previous === undefined) prefix = "first";
    else if (previous.epoch !== request.epoch) prefix = "new-epoch";
    else prefix = request.reusedBytes >= previous.bytes ? "extends" : "break-within-epoch";
    return {
      index: i + 1,
      at: iso(request.at),
      provider: session.provider,
      model: session.model,
      epoch: request.epoch,
      bytes: request.bytes,
      reusedBytes: request.reusedBytes,
      newBytes: request.newBytes,
      prefix,
      ...(prefix === "new-epoch" && epoch !== undefined ? { reason: epoch.reason } : {}),
      ...(request.cache === undefined ? {} : { cache: request.cache }),
    };
  });
}

function viewOf(session: DevSession): SessionView {
  const active = session.epochs.at(-1);
  return {
    ...summaryOf(session),
    epochs: session.epochs.map((e) => ({ number: e.number, reason: e.reason, at: iso(e.startedAt), baseline: e.baseline })),
    baseline: active === undefined ? null : active.baseline,
    messages: session.messages.map((m) => ({
      seq: m.seq,
      epoch: m.epoch,
      role: m.role,
      text: m.text,
      isSystemUpdate: m.role === "system-update",
      ...(m.toolCalls === undefined ? {} : { toolNames: m.toolCalls }),
    })),
    snapshot: session.snapshot.map((row) => ({ key: row.key, value: row.value, admittedAt: iso(row.admittedAt) })),
    requests: requestsOf(session),
  };
}

/** The inspector's view of a dev host's model. */
export function devInspectorSource(model: DevModel, mcpServers?: () => readonly McpServerView[]): InspectorSource {
  return {
    ...(mcpServers === undefined ? {} : { mcpServers }),
    sessions: () => model.sessions().map(summaryOf),
    session: (id) => {
      const session = model.session(id);
      return session === undefined ? undefined : viewOf(session);
    },
    plugins: () =>
      model.plugins().map((plugin) => ({
        name: plugin.name,
        file: plugin.file,
        origin: plugin.origin === undefined ? "" : formatOrigin(plugin.origin, process.cwd()),
        files: [plugin.file],
        generation: plugin.generation,
        keys: plugin.keys,
        reloads: plugin.reloads.map((r) => ({ generation: r.generation, at: iso(r.at), ms: r.loadMs })),
        problems: plugin.problems.map(problemOf),
      })),
    problems: () => model.problems().map(problemOf),
    subscribe: (listener: (event: InspectorEvent) => void) => {
      const off = [
        model.on("session", ({ session }) => listener({ kind: "session", session: session.id })),
        model.on("boundary", ({ session }) => listener({ kind: "boundary", session: session.id })),
        model.on("plugin", ({ plugin }) => listener({ kind: "plugin", plugin: plugin.name })),
        model.on("problem", () => listener({ kind: "problem" })),
      ];
      return () => {
        for (const stop of off) stop();
      };
    },
  };
}
