// Owns the host services a plugin can resolve from its generation's awilix scope.

/** The host's clock; injected so tests can move time. */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
}

/** Where plugin and host messages go. */
export interface Logger {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

/** Services every plugin generation can resolve (`api.services.clock`, …). */
export interface HostServices<Config = unknown> {
  readonly clock: Clock;
  readonly logger: Logger;
  /** The host's working folder. A source's loader gets the session's location as `env.location`. */
  readonly location: string;
  /** This plugin's settings from the host's config, checked against the plugin's `config` schema. */
  readonly config: Config;
  /** This plugin's name (its namespace). */
  readonly pluginName: string;
}

export const systemClock: Clock = { now: () => Date.now() };

export const consoleLogger: Logger = {
  info: (message) => console.log(message),
  warn: (message) => console.warn(message),
  error: (message) => console.error(message),
};

export const silentLogger: Logger = { info() {}, warn() {}, error() {} };
