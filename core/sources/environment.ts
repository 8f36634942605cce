// Owns the `core/environment` Context Source: where the session runs. It is
// location-scoped: it observes the session's location at each boundary, so it
// re-resolves when a session moves.

import path from "node:path";
import Type from "typebox";
import { perEnv } from "../registry/per-env.ts";
import { make } from "../system-context/index.ts";
import type { CoreSource } from "./core-source.ts";
import { projectRootOf } from "./project-root.ts";

const Environment = Type.Object({
  workingDirectory: Type.String(),
  projectRoot: Type.String(),
  isGitRepository: Type.Boolean(),
  platform: Type.String(),
});

function describe(env: { workingDirectory: string; projectRoot: string; isGitRepository: boolean; platform: string }) {
  return [
    `Working directory: ${env.workingDirectory}`,
    `Project root: ${env.projectRoot}`,
    `Is a git repository: ${env.isGitRepository ? "yes" : "no"}`,
    `Platform: ${env.platform}`,
  ].join("\n");
}

/** The `core/environment` source. */
export function environmentSource(options: { platform?: string } = {}): CoreSource {
  const platform = options.platform ?? process.platform;
  return {
    key: "core/environment",
    // Built once per session env, not at every boundary.
    load: perEnv((env) =>
      make({
        key: "core/environment",
        schema: Environment,
        load: () => {
          const { root, isGitRepository } = projectRootOf(env.location);
          return { workingDirectory: path.resolve(env.location), projectRoot: root, isGitRepository, platform };
        },
        baseline: (current) => `<environment>\n${describe(current)}\n</environment>`,
        update: (_previous, current) => `The environment is now:\n<environment>\n${describe(current)}\n</environment>`,
      }),
    ),
  };
}
