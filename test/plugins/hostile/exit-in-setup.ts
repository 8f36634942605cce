// Ends the process it runs in, with a success code, from setup.

import { definePlugin } from "context-host";
import Type from "typebox";

export default definePlugin({
  name: "exit-in-setup",
  setup(api) {
    api.source({
      key: "exit-in-setup/x",
      schema: Type.String(),
      load: () => "never served",
      baseline: (value) => `exit-in-setup: ${value}`,
      update: (_previous, value) => `exit-in-setup is now ${value}`,
    });
    process.exit(0);
  },
});
