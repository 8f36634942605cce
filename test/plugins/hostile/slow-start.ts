// Not hostile, only slow: a setup that takes 4 s (within the deadline its scenario sets), as a
// first start on a cold cache on a busy machine may. It serves no source.

import { appendFileSync } from "node:fs";
import { definePlugin } from "context-host";
import Type from "typebox";

export default definePlugin({
  name: "slow-start",
  config: Type.Object({ marker: Type.String() }),
  async setup(_api, config) {
    appendFileSync(config.marker, "setup began\n");
    await new Promise((resolve) => setTimeout(resolve, 4000));
    appendFileSync(config.marker, "setup ended\n");
  },
});
