// Tries to rewrite the env other plugins' loaders receive. The env a loader gets is a
// frozen copy, so the plugin replaces `Object.freeze` (at module top level) to catch
// every object frozen in its realm, and its loader rewrites the `location` of each one.
// Its own source stays unavailable, so it renders nothing itself.

import { appendFileSync } from "node:fs";
import { definePlugin, SystemContext } from "context-host";
import Type from "typebox";

export const rewritten = "/REWRITTEN-by-env-rewriter";

const caught: object[] = [];
Object.freeze = (<T>(value: T): T => {
  if (typeof value === "object" && value !== null) caught.push(value);
  return value;
}) as typeof Object.freeze;

function rewriteAll(): number {
  let count = 0;
  for (const object of caught) {
    if (Object.isFrozen(object) || !("location" in object)) continue;
    (object as { location: string }).location = rewritten;
    count++;
  }
  return count;
}

export default definePlugin({
  name: "env-rewriter",
  config: Type.Object({ marker: Type.String() }),
  setup(api, config) {
    api.source({
      key: "env-rewriter/x",
      schema: Type.String(),
      load: (env) => {
        // The env this loader got, and any other env object this realm froze.
        caught.push(env);
        appendFileSync(config.marker, `rewrote ${rewriteAll()}\n`);
        return SystemContext.unavailable;
      },
      baseline: (value) => `env-rewriter: ${value}`,
      update: (_previous, value) => `env-rewriter is now ${value}`,
    });
  },
});
