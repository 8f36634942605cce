// Owns the host services a plugin can resolve from its generation's awilix scope.

import type { Clock, Logger } from "../base/clock.ts";

/** Services every plugin generation can resolve (`api.services.clock`, …). */
export interface PluginServices<Config = unknown> {
  readonly clock: Clock;
  readonly logger: Logger;
  /** The host's working folder. A source's loader gets the session's location as `env.location`. */
  readonly location: string;
  /** This plugin's settings from the host's config, checked against the plugin's `config` schema. */
  readonly config: Config;
  /** This plugin's name (its namespace). */
  readonly pluginName: string;
}
