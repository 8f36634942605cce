// First-party plugin `git`: the working folder's branch, short HEAD and count of
// changed files, observed with the `git` program at each Safe Provider-Turn Boundary.
// Outside a repository the source is absent (its removal text is emitted once it had
// been admitted); when git fails otherwise it is unavailable (the last admitted state
// stays in effect).

import { definePlugin, SystemContext } from "context-host";
import Type from "typebox";
import { renderBaseline, renderRemoved, renderUpdate } from "./render.ts";
import { observeGit } from "./status.ts";

const GitStatusSchema = Type.Object({
  branch: Type.Union([Type.String(), Type.Null()]),
  head: Type.Union([Type.String(), Type.Null()]),
  changed: Type.Integer({ minimum: 0 }),
});

const Config = Type.Object({
  /** The git program: a name looked up on PATH, or a path. */
  gitPath: Type.String({ minLength: 1, default: "git" }),
  /** How long one `git status` may run before it is killed (the source is then unavailable). */
  timeoutMs: Type.Integer({ minimum: 1, maximum: 60_000, default: 1500 }),
});

/** Slack between killing git and the host's own loader deadline, so git is killed, not abandoned. */
const deadlineSlackMs = 500;

export default definePlugin({
  name: "git",
  config: Config,
  setup(api, config) {
    const { logger } = api.services;
    // Report a failure once when it starts (or changes), not at every boundary.
    let lastFailure: string | undefined;

    api.source({
      key: "git/status",
      schema: GitStatusSchema,
      deadlineMs: config.timeoutMs + deadlineSlackMs,
      async load(env) {
        const observed = await observeGit(config, env.location);
        if (observed.kind === "failed") {
          if (observed.reason !== lastFailure) logger.warn(`git/status is unavailable: ${observed.reason}`);
          lastFailure = observed.reason;
          return SystemContext.unavailable;
        }
        lastFailure = undefined;
        if (observed.kind === "not-a-repository") return SystemContext.absent;
        return observed.status;
      },
      baseline: renderBaseline,
      update: renderUpdate,
      removed: renderRemoved,
    });
  },
});
