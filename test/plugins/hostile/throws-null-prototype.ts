// A Baseline renderer that throws an object with no prototype: no `message`, no
// `toString`, nothing a host can turn into text without care.

import { appendFileSync } from "node:fs";
import { definePlugin } from "context-host";
import Type from "typebox";

export default definePlugin({
  name: "throws-null-prototype",
  config: Type.Object({ marker: Type.String() }),
  setup(api, config) {
    api.source({
      key: "throws-null-prototype/x",
      schema: Type.String(),
      load: () => "loaded",
      baseline: () => {
        appendFileSync(config.marker, "renderer\n");
        throw Object.create(null);
      },
      update: (_previous, value) => `throws-null-prototype is now ${value}`,
    });
  },
});
