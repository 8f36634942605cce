// A loader that allocates until the heap it runs in is exhausted.

import { appendFileSync } from "node:fs";
import { definePlugin } from "context-host";
import Type from "typebox";

export default definePlugin({
  name: "hoarder",
  config: Type.Object({ marker: Type.String() }),
  setup(api, config) {
    api.source({
      key: "hoarder/x",
      schema: Type.String(),
      load: () => {
        appendFileSync(config.marker, "loader\n");
        const hoard: number[][] = [];
        // Ordinary arrays live on the JavaScript heap (typed arrays would not).
        for (;;) hoard.push(new Array<number>(1 << 20).fill(hoard.length));
      },
      baseline: (value) => `hoarder: ${value}`,
      update: (_previous, value) => `hoarder is now ${value}`,
    });
  },
});
