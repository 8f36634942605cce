// Owns the guard around a plugin's Context Source: a loader deadline and fault
// containment, so a broken plugin makes its source unavailable, never the host fail.

import { withinDeadline } from "../base/deadline.ts";
import type { Registration } from "../registry/registry.ts";
import { contain, type SourceFault } from "../system-context/index.ts";
import type { PluginSource } from "./define.ts";

export interface Guard {
  readonly deadlineMs: number;
  readonly maxTextLength: number;
  report(fault: SourceFault): void;
}

/** A plugin-origin registration whose loader and renderers are contained. */
export function guardedRegistration(source: PluginSource, guard: Guard): Registration {
  const deadlineMs = source.deadlineMs ?? guard.deadlineMs;
  const removed = source.removed;
  return {
    key: source.key,
    origin: "plugin",
    load: (env) =>
      contain(
        {
          key: source.key,
          schema: source.schema,
          load: () => withinDeadline(() => source.load(env), deadlineMs, `loader ${source.key}`),
          baseline: (current) => source.baseline(current),
          update: (previous, current) => source.update(previous, current),
          ...(removed === undefined ? {} : { removed: (previous: unknown) => removed.call(source, previous) }),
        },
        { report: guard.report, maxTextLength: guard.maxTextLength },
      ),
  };
}
