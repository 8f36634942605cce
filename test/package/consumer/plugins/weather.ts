// A plugin in the consumer's own folder. It imports the plugin entry by name; inside the
// host that resolves to the host's own copy, so `SystemContext.absent` is the host's value.

import { definePlugin, SystemContext } from "context-host/plugin";
import Type from "typebox";

export default definePlugin({
  name: "weather",
  setup(api) {
    api.source({
      key: "weather/today",
      schema: Type.Object({ sky: Type.String() }),
      load: () => ({ sky: "clear" }),
      baseline: (weather) => `The sky over ${api.name} is ${weather.sky}.`,
      update: (_previous, weather) => `The sky is now ${weather.sky}.`,
    });
    api.source({
      key: "weather/alert",
      schema: Type.String(),
      load: () => SystemContext.absent,
      baseline: (alert) => `Weather alert: ${alert}`,
      update: (_previous, alert) => `Weather alert now: ${alert}`,
    });
  },
});
