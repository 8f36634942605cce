// A setup that never returns (after registering a source it would serve).

import { appendFileSync } from "node:fs";
import { definePlugin } from "context-host";
import Type from "typebox";

export default definePlugin({
  name: "spin-in-setup",
  config: Type.Object({ marker: Type.String() }),
  setup(api, config) {
    api.source({
      key: "spin-in-setup/x",
      schema: Type.String(),
      load: () => "never served",
      baseline: (value) => `spin-in-setup: ${value}`,
      update: (_previous, value) => `spin-in-setup is now ${value}`,
    });
    appendFileSync(config.marker, "setup\n");
    for (;;) {}
  },
});
