// A Baseline renderer that throws a value nested 3,000 levels deep (an error whose
// `cause` chain is that long), so anything that walks it recursively overflows.

import { appendFileSync } from "node:fs";
import { definePlugin } from "context-host";
import Type from "typebox";

function deep(levels: number): unknown {
  let value: unknown = { bottom: true };
  for (let i = 0; i < levels; i++) value = new Error(`level ${i}`, { cause: [value] });
  return value;
}

export default definePlugin({
  name: "throws-deep-value",
  config: Type.Object({ marker: Type.String() }),
  setup(api, config) {
    api.source({
      key: "throws-deep-value/x",
      schema: Type.String(),
      load: () => "loaded",
      baseline: () => {
        appendFileSync(config.marker, "renderer\n");
        throw deep(3000);
      },
      update: (_previous, value) => `throws-deep-value is now ${value}`,
    });
  },
});
