// Module code that never finishes: the plugin is stuck before `definePlugin` is reached.

import { definePlugin } from "context-host";
import Type from "typebox";

for (;;) {}

export default definePlugin({
  name: "spin-at-top-level",
  setup(api) {
    api.source({
      key: "spin-at-top-level/x",
      schema: Type.String(),
      load: () => "never served",
      baseline: (value) => `spin-at-top-level: ${value}`,
      update: (_previous, value) => `spin-at-top-level is now ${value}`,
    });
  },
});
