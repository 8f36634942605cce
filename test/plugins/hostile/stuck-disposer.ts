// A disposer that never settles. A test rewrites `generation` to make the next generation.

import { appendFileSync } from "node:fs";
import { definePlugin } from "context-host";
import Type from "typebox";

const generation = "first";

export default definePlugin({
  name: "stuck-disposer",
  config: Type.Object({ marker: Type.String() }),
  setup(api, config) {
    appendFileSync(config.marker, `setup ${generation}\n`);
    api.onDispose(() => {
      appendFileSync(config.marker, `dispose ${generation}\n`);
      return new Promise<void>(() => {});
    });
  },
});
