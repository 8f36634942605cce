// Leaves a rejected promise nobody handles.

import { appendFileSync } from "node:fs";
import { definePlugin } from "context-host";
import Type from "typebox";

export default definePlugin({
  name: "unhandled-rejection",
  config: Type.Object({ marker: Type.String() }),
  setup(_api, config) {
    appendFileSync(config.marker, "setup\n");
    void Promise.reject(new Error("rejected and never handled"));
  },
});
