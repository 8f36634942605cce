// A loader that never returns: `for (;;) {}` holds the thread it runs on.

import { appendFileSync } from "node:fs";
import { definePlugin } from "context-host";
import Type from "typebox";

export default definePlugin({
  name: "spin-in-loader",
  config: Type.Object({ marker: Type.String() }),
  setup(api, config) {
    api.source({
      key: "spin-in-loader/x",
      schema: Type.String(),
      load: () => {
        appendFileSync(config.marker, "loader\n");
        for (;;) {}
      },
      baseline: (value) => `spin-in-loader: ${value}`,
      update: (_previous, value) => `spin-in-loader is now ${value}`,
    });
  },
});
