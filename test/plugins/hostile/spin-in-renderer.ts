// A Baseline renderer that never returns.

import { appendFileSync } from "node:fs";
import { definePlugin } from "context-host";
import Type from "typebox";

export default definePlugin({
  name: "spin-in-renderer",
  config: Type.Object({ marker: Type.String() }),
  setup(api, config) {
    api.source({
      key: "spin-in-renderer/x",
      schema: Type.String(),
      load: () => "loaded",
      baseline: () => {
        appendFileSync(config.marker, "renderer\n");
        for (;;) {}
      },
      update: (_previous, value) => `spin-in-renderer is now ${value}`,
    });
  },
});
