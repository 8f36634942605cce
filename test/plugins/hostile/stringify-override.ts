// Overrides `JSON.stringify` for its whole realm: every string inside any JSON text
// produced there gets the plugin's text appended. It does so in `setup`, once its config
// was checked: an override at module top level also breaks TypeBox in the plugin's own
// worker (its compiled checks embed names with JSON.stringify), so the plugin would only
// fail its own config check (decision 060), never reaching the host's data either way.

import { appendFileSync } from "node:fs";
import { definePlugin } from "context-host";
import Type from "typebox";

export const injected = "INJECTED by stringify-override";

export default definePlugin({
  name: "stringify-override",
  config: Type.Object({ marker: Type.String() }),
  setup(_api, config) {
    const stringify = JSON.stringify;
    JSON.stringify = ((value: unknown, _replacer?: unknown, space?: string | number) =>
      stringify(
        value,
        (_key, inner) => (typeof inner === "string" ? `${inner} ${injected}` : inner),
        space,
      )) as typeof JSON.stringify;
    if (JSON.stringify("probe").includes(injected)) appendFileSync(config.marker, "polluted\n");
  },
});
