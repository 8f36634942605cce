// A plugin as a third party writes it: its own package, `context-host` as a peer, one
// Context Source whose value is the harbor's next high water, read from a tide table in
// the session's project (`tides.json`), absent when the project has none.

import { readFile } from "node:fs/promises";
import path from "node:path";
import { definePlugin, SystemContext } from "context-host/plugin";
import Type from "typebox";

const HighWater = Type.Object({
  harbor: Type.String({ minLength: 1 }),
  /** Local time of the next high water, `HH:MM`. */
  time: Type.String({ pattern: "^[0-2][0-9]:[0-5][0-9]$" }),
  heightM: Type.Number({ minimum: -5, maximum: 20 }),
});

export default definePlugin({
  name: "tides",
  config: Type.Object({ harbor: Type.String({ minLength: 1 }) }),
  setup(api, config) {
    api.source({
      key: "tides/high-water",
      schema: HighWater,
      async load(env) {
        let text: string;
        try {
          text = await readFile(path.join(env.location, "tides.json"), "utf8");
        } catch {
          return SystemContext.absent;
        }
        const table = JSON.parse(text) as Record<string, { time: string; heightM: number }>;
        const next = table[config.harbor];
        return next === undefined ? SystemContext.absent : { harbor: config.harbor, ...next };
      },
      baseline: (tide) => `Next high water at ${tide.harbor}: ${tide.time}, ${tide.heightM} m.`,
      update: (_previous, tide) => `The next high water at ${tide.harbor} is now ${tide.time}, ${tide.heightM} m.`,
      removed: (tide) => `There is no tide table for ${tide.harbor} any more.`,
      examples: [
        { harbor: "Brest", time: "06:12", heightM: 6.1 },
        { harbor: "Brest", time: "18:40", heightM: 5.8 },
      ],
    });
  },
});
