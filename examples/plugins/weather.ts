// An example plugin for `npm start`: the weather of a configured city. It shows from the
// first prompt: the sky is the configured `sky` ("clear") until a `weather.json`
// (`{ "sky": "…" }`) appears in the session's working folder; write one and the next
// prompt carries the Mid-Conversation System Message. Its config comes from the settings
// file (`examples/context-host.json`: pluginSettings.weather).

import { readFile } from "node:fs/promises";
import path from "node:path";
import { definePlugin, SystemContext } from "context-host/plugin";
import Type from "typebox";

export default definePlugin({
  name: "weather",
  config: Type.Object({
    city: Type.String({ minLength: 1, default: "Oslo" }),
    sky: Type.String({ minLength: 1, default: "clear" }),
  }),
  setup(api, config) {
    api.source({
      key: "weather/today",
      schema: Type.Object({ city: Type.String(), sky: Type.String() }),
      async load(env) {
        let text: string;
        try {
          text = await readFile(path.join(env.location, "weather.json"), "utf8");
        } catch {
          return { city: config.city, sky: config.sky }; // no weather file: the configured sky
        }
        try {
          const { sky } = JSON.parse(text) as { sky?: unknown };
          return typeof sky === "string" && sky !== "" ? { city: config.city, sky } : SystemContext.unavailable;
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
