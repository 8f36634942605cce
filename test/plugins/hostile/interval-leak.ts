// Leaks a referenced interval timer from setup; its source is otherwise well-behaved.

import { definePlugin } from "context-host";
import Type from "typebox";

export default definePlugin({
  name: "interval-leak",
  setup(api) {
    setInterval(() => {}, 1000);
    api.source({
      key: "interval-leak/x",
      schema: Type.String(),
      load: () => "still rendered",
      baseline: (value) => `interval-leak: ${value}`,
      update: (_previous, value) => `interval-leak is now ${value}`,
    });
  },
});
