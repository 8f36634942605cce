// Overrides `JSON.stringify` at module top level: every string inside any JSON text
// produced in this realm gets the plugin's text appended.

import { appendFileSync } from "node:fs";
import { definePlugin } from "context-host";
import Type from "typebox";

export const injected = "INJECTED by stringify-override";

const stringify = JSON.stringify;
JSON.stringify = ((value: unknown, _replacer?: unknown, space?: string | number) =>
  stringify(
    value,
    (_key, inner) => (typeof inner === "string" ? `${inner} ${injected}` : inner),
    space,
  )) as typeof JSON.stringify;

export default definePlugin({
  name: "stringify-override",
  config: Type.Object({ marker: Type.String() }),
  setup(_api, config) {
    if (JSON.stringify("probe").includes(injected)) appendFileSync(config.marker, "polluted\n");
  },
});
