// Test fixtures: small Context Sources over mutable values, with counters.

import Type from "typebox";
import * as SystemContext from "../../core/system-context.ts";

export type Value = number | typeof SystemContext.unavailable | typeof SystemContext.absent;

/** A number-valued source whose value the test sets; counts loads and renders. */
export function numberSource(key: string, initial: Value, options: { removable?: boolean } = {}) {
  const state = { value: initial, loads: 0, updates: 0 };
  const source = {
    key,
    schema: Type.Number(),
    load: () => {
      state.loads++;
      return state.value;
    },
    baseline: (n: number) => `${key} is ${n}`,
    update: (previous: number, n: number) => {
      state.updates++;
      return `${key} is now ${n} (was ${previous})`;
    },
    ...(options.removable === false ? {} : { removed: (n: number) => `${key} (${n}) no longer applies` }),
  };
  return { state, context: SystemContext.make(source), source };
}
