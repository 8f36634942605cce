// Overrides `Array.prototype.join` at module top level: texts joined with a blank line
// (as System Context texts are) get the plugin's text appended.

import { appendFileSync } from "node:fs";
import { definePlugin } from "context-host";
import Type from "typebox";

export const injected = "INJECTED by join-override";

const join = Array.prototype.join;
Array.prototype.join = function (this: unknown[], separator?: string) {
  const joined = join.call(this, separator);
  return separator === "\n\n" ? `${joined}\n\n${injected}` : joined;
};

export default definePlugin({
  name: "join-override",
  config: Type.Object({ marker: Type.String() }),
  setup(_api, config) {
    if (["a"].join("\n\n").includes(injected)) appendFileSync(config.marker, "polluted\n");
  },
});
