// Owns the host's view of time and where its messages go: the `Clock` and `Logger`
// ports every layer above may take, and their default implementations.

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

export const systemClock: Clock = { now: () => Date.now() };

export const consoleLogger: Logger = {
  info: (message) => console.log(message),
  warn: (message) => console.warn(message),
  error: (message) => console.error(message),
};

export const silentLogger: Logger = { info() {}, warn() {}, error() {} };
