// Throws from a timer callback: an uncaught exception, outside any call the host made.

import { appendFileSync } from "node:fs";
import { definePlugin } from "context-host";
import Type from "typebox";

export default definePlugin({
  name: "throw-in-timer",
  config: Type.Object({ marker: Type.String() }),
  setup(_api, config) {
    setTimeout(() => {
      appendFileSync(config.marker, "timer\n");
      throw new Error("thrown in a timer");
    }, 5);
  },
});
