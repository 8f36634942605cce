// An example plugin for `npm start`: the weather of a configured city, read from a
// small JSON file beside the session's working folder (`weather.json`, `{ "sky": "…" }`)
// so you can change it and watch the Mid-Conversation System Message arrive. Its config
// comes from the settings file (`examples/context-host.json`: pluginSettings.weather).

import { readFile } from "node:fs/promises";
import path from "node:path";
import { definePlugin, SystemContext } from "context-host/plugin";
import Type from "typebox";

export default definePlugin({
  name: "weather",
  config: Type.Object({ city: Type.String({ minLength: 1, default: "Oslo" }) }),
  setup(api, config) {
    api.source({
      key: "weather/today",
      schema: Type.Object({ city: Type.String(), sky: Type.String() }),
      async load(env) {
        let text: string;
        try {
          text = await readFile(path.join(env.location, "weather.json"), "utf8");
        } catch {
          return SystemContext.absent; // no weather file: nothing to tell
        }
        try {
          const { sky } = JSON.parse(text) as { sky?: unknown };
          return typeof sky === "string" ? { city: config.city, sky } : SystemContext.unavailable;
        } catch {
          return SystemContext.unavailable; // mid-write: keep what the model was told
        }
      },
      baseline: (w) => `The weather in ${w.city}: ${w.sky}.`,
      update: (_previous, w) => `The weather in ${w.city} is now ${w.sky}.`,
      removed: (w) => `The weather in ${w.city} is no longer tracked.`,
    });
  },
});
