// Replaces the timers and the clock of the realm it runs in, then registers a loader
// that never settles: only a deadline on a clock the plugin cannot touch ends it.

import { appendFileSync } from "node:fs";
import { definePlugin } from "context-host";
import Type from "typebox";

const never = (() => 0) as unknown as typeof setTimeout;
globalThis.setTimeout = never;
globalThis.setInterval = never as unknown as typeof setInterval;
globalThis.setImmediate = never as unknown as typeof setImmediate;
const frozenNow = Date.now();
Date.now = () => frozenNow;
performance.now = () => 0;

export default definePlugin({
  name: "timer-replacer",
  config: Type.Object({ marker: Type.String() }),
  setup(api, config) {
    api.source({
      key: "timer-replacer/x",
      schema: Type.String(),
      load: () => {
        appendFileSync(config.marker, "loader\n");
        return new Promise<string>(() => {});
      },
      baseline: (value) => `timer-replacer: ${value}`,
      update: (_previous, value) => `timer-replacer is now ${value}`,
    });
  },
});
