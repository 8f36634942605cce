// Owns the guard around a plugin's Context Source: a loader deadline and fault
// containment, so a broken plugin makes its source unavailable, never the host fail.

import type { Registration, SourceEnv } from "../registry/registry.ts";
import { contain, type SourceFault } from "../system-context/index.ts";
import type { PluginSource } from "./define.ts";

/** A loader that did not settle before its deadline. */
export class DeadlineExceeded extends Error {
  override readonly name = "DeadlineExceeded";
  constructor(
    readonly key: string,
    readonly ms: number,
  ) {
    super(`loader did not finish within its deadline of ${ms} ms`);
  }
}

export interface Guard {
  readonly deadlineMs: number;
  readonly maxTextLength: number;
  report(fault: SourceFault): void;
}

function loadWithin<T>(source: PluginSource, env: SourceEnv, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new DeadlineExceeded(source.key, ms)), ms);
    timer.unref();
    Promise.resolve()
      .then(() => source.load(env))
      .then(
        (value) => {
          clearTimeout(timer);
          resolve(value as T);
        },
        (error) => {
          clearTimeout(timer);
          reject(error);
        },
      );
  });
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
          load: () => loadWithin(source, env, deadlineMs),
          baseline: (current) => source.baseline(current),
          update: (previous, current) => source.update(previous, current),
          ...(removed === undefined ? {} : { removed: (previous: unknown) => removed.call(source, previous) }),
        },
        { report: guard.report, maxTextLength: guard.maxTextLength },
      ),
  };
}
