// Owns the shape of a core Context Source registration: trusted code the host
// composes before every plugin source, in the order it is given.

import type { SourceEnv } from "../registry/registry.ts";
import type { SystemContext } from "../system-context/index.ts";

/** A core Context Source registration: trusted, composed before every plugin source, in this order. */
export interface CoreSource {
  readonly key: string;
  load(env: SourceEnv): SystemContext | Promise<SystemContext>;
}
