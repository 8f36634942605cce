// A loader that ends the process it runs in, with a success code.

import { appendFileSync } from "node:fs";
import { definePlugin } from "context-host";
import Type from "typebox";

export default definePlugin({
  name: "exit-in-loader",
  config: Type.Object({ marker: Type.String() }),
  setup(api, config) {
    api.source({
      key: "exit-in-loader/x",
      schema: Type.String(),
      load: () => {
        appendFileSync(config.marker, "loader\n");
        process.exit(0);
      },
      baseline: (value) => `exit-in-loader: ${value}`,
      update: (_previous, value) => `exit-in-loader is now ${value}`,
    });
  },
});
