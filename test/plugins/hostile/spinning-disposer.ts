// A disposer that never returns: `for (;;) {}` when its generation is closed.

import { appendFileSync } from "node:fs";
import { definePlugin } from "context-host";
import Type from "typebox";

export default definePlugin({
  name: "spinning-disposer",
  config: Type.Object({ marker: Type.String() }),
  setup(api, config) {
    api.onDispose(() => {
      appendFileSync(config.marker, "dispose\n");
      for (;;) {}
    });
  },
});
