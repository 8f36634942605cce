// Owns the adapter from the dev host's in-memory model (`DevModel`) to the browser
// inspector's read interface (`InspectorSource`): the page shows the very session views
// the terminal session recorded, with the same times, Baselines and cached-prefix figures.

import { type Diagnostic, formatOrigin } from "../../../core/index.ts";
import type { InspectorEvent, InspectorSource, McpServerView, ProblemView } from "../inspector/source.ts";
import { isoTime, summaryOf } from "../session-view.ts";
import type { DevModel } from "./model.ts";

function problemOf(diagnostic: Diagnostic): ProblemView {
  return { ...diagnostic };
}

/** The inspector's view of a dev host's model. */
export function devInspectorSource(model: DevModel, mcpServers?: () => readonly McpServerView[]): InspectorSource {
  return {
    ...(mcpServers === undefined ? {} : { mcpServers }),
    sessions: () => model.sessions().map(summaryOf),
    session: (id) => model.session(id),
    plugins: () =>
      model.plugins().map((plugin) => ({
        name: plugin.name,
        file: plugin.file,
        origin: plugin.origin === undefined ? "" : formatOrigin(plugin.origin, process.cwd()),
        files: [plugin.file],
        generation: plugin.generation,
        keys: plugin.keys,
        reloads: plugin.reloads.map((r) => ({ generation: r.generation, at: isoTime(r.at), ms: r.loadMs })),
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
