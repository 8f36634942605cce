// First-party plugin `package-scripts`: the npm scripts of the project's nearest
// package.json at or above the session's working folder. No package.json: absent
// (its removal text is emitted once it had been admitted). A package.json that cannot
// be read or parsed right now (say, mid-write): unavailable, the last admitted
// scripts stay in effect.

import { definePlugin, SystemContext } from "context-host";
import Type from "typebox";
import { observePackage } from "./read.ts";
import { renderBaseline, renderRemoved, renderUpdate } from "./render.ts";

const PackageScriptsSchema = Type.Object({
  name: Type.Union([Type.String(), Type.Null()]),
  directory: Type.String(),
  scripts: Type.Array(Type.Object({ name: Type.String(), command: Type.String() })),
  omitted: Type.Integer({ minimum: 0 }),
  packageManager: Type.Optional(Type.String()),
});

const Config = Type.Object({
  /** Scripts listed at most; the rest are counted. */
  maxScripts: Type.Integer({ minimum: 1, maximum: 500, default: 40 }),
  /** Longest command shown, in characters. */
  maxCommandLength: Type.Integer({ minimum: 8, maximum: 2000, default: 200 }),
});

export default definePlugin({
  name: "package-scripts",
  config: Config,
  setup(api, config) {
    const { logger } = api.services;
    // Report a failure once when it starts (or changes), not at every boundary.
    let lastFailure: string | undefined;

    api.source({
      key: "package-scripts/scripts",
      schema: PackageScriptsSchema,
      async load(env) {
        const observed = await observePackage(env.location, config);
        if (observed.kind === "unreadable") {
          const failure = `${observed.file}: ${observed.reason}`;
          if (failure !== lastFailure) logger.warn(`package-scripts/scripts is unavailable: ${failure}`);
          lastFailure = failure;
          return SystemContext.unavailable;
        }
        lastFailure = undefined;
        if (observed.kind === "none") return SystemContext.absent;
        return observed.value;
      },
      baseline: renderBaseline,
      update: renderUpdate,
      removed: renderRemoved,
    });
  },
});
