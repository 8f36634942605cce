// Owns the guard around a plugin's Context Source: a loader deadline and fault
// containment, so a broken plugin makes its source unavailable, never the host fail.
// The contained source (codec, validator, closures) is built once per session env and
// reused at every boundary, not rebuilt per boundary.

import { withinDeadline } from "../base/deadline.ts";
import { perEnv } from "../registry/per-env.ts";
import type { Registration, SourceEnv } from "../registry/registry.ts";
import { absent, contain, type SourceFault, type SystemContext, unavailable } from "../system-context/index.ts";
import type { PluginSource } from "./define.ts";
import type { ObservedKind } from "./events.ts";

export interface Guard {
  readonly deadlineMs: number;
  readonly maxTextLength: number;
  /** Largest accepted value of an isolated source, in UTF-8 bytes of its JSON. */
  readonly maxValueBytes?: number;
  report(fault: SourceFault): void;
  /** The loader of `key` returned without throwing (what it returned): its earlier load faults may no longer hold. */
  observed(key: string, kind: ObservedKind): void;
}

/** What a loader's result was, for `/context` (decision 124). */
const observedOf = (loaded: unknown): ObservedKind =>
  loaded === unavailable ? "unavailable" : loaded === absent ? "absent" : "value";

/** A plugin-origin registration whose loader and renderers are contained, built once per session env. */
export function guardedRegistration(source: PluginSource, guard: Guard): Registration {
  return {
    key: source.key,
    origin: "plugin",
    // A frozen copy of the env: a plugin cannot change what another plugin's loader is told.
    load: perEnv((env) => containedFor(source, guard, env)),
  };
}

function containedFor(source: PluginSource, guard: Guard, env: SourceEnv): SystemContext {
  const deadlineMs = source.deadlineMs ?? guard.deadlineMs;
  const removed = source.removed;
  const what = `loader ${source.key}`;
  return contain(
    {
      key: source.key,
      schema: source.schema,
      load: () => {
        // A loader that returns at once needs no timer (in-process, nothing could interrupt it anyway).
        const loaded = source.load(env);
        if (!(loaded instanceof Promise)) {
          guard.observed(source.key, observedOf(loaded));
          return loaded;
        }
        return withinDeadline(() => loaded, deadlineMs, what).then((value) => {
          guard.observed(source.key, observedOf(value));
          return value;
        });
      },
      baseline: (current) => source.baseline(current),
      update: (previous, current) => source.update(previous, current),
      ...(removed === undefined ? {} : { removed: (previous: unknown) => removed.call(source, previous) }),
    },
    { report: guard.report, maxTextLength: guard.maxTextLength },
  );
}
