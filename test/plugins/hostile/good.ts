// The well-behaved plugin of every hostile scenario: one source whose value is the text
// of a file (so a test changes it without a reload) and the session's location, as the
// loader's env says. Its texts are what every session must store, whatever the others do.

import { readFileSync } from "node:fs";
import { definePlugin } from "context-host";
import Type from "typebox";

export default definePlugin({
  name: "good",
  config: Type.Object({ valueFile: Type.String() }),
  setup(api, config) {
    api.source({
      key: "good/status",
      schema: Type.String(),
      load: (env) => `${readFileSync(config.valueFile, "utf8").trim()} @ ${env.location}`,
      baseline: (value) => `good: ${value}`,
      update: (_previous, value) => `good is now ${value}`,
    });
  },
});
