// Owns the limits a plugin runs under (decision 161), resolved once from these defaults and
// the host's options into one frozen object that every layer reads: no other file defaults a limit.

export interface PluginLimits {
  /** A loader's deadline, unless its source sets its own (`deadlineMs`). */
  readonly deadlineMs: number;
  /** How long a plugin's module code and `setup` may run. */
  readonly setupDeadlineMs: number;
  /** How long a generation's disposers may run. */
  readonly disposeDeadlineMs: number;
  /** Time a plugin's renderers may take at one boundary, besides its loaders' deadline. */
  readonly renderDeadlineMs: number;
  /** Longest accepted rendering, in UTF-16 code units. */
  readonly maxTextLength: number;
  /** Largest accepted source value, in UTF-8 bytes of its JSON text. */
  readonly maxValueBytes: number;
  /** Deepest accepted nesting of a source value. */
  readonly maxDepth: number;
  /** Heap limit of a plugin's worker (its old generation), MiB. */
  readonly heapMb: number;
  /** Stops of a worker within `crashWindowMs` that disable its plugin until its file changes. */
  readonly maxCrashes: number;
  readonly crashWindowMs: number;
  /** Waits before the n-th restart of a worker within the window (the last one repeats). */
  readonly backoffMs: readonly number[];
  /**
   * Plugins that get a worker of their own (may be 0); those beyond share workers, each in its
   * realm.
   */
  readonly dedicatedWorkers: number;
  /** Plugins sharing one worker, beyond `dedicatedWorkers` (1: none share). */
  readonly pluginsPerWorker: number;
}

export const pluginLimitDefaults: PluginLimits = Object.freeze({
  deadlineMs: 2000,
  setupDeadlineMs: 10_000,
  disposeDeadlineMs: 5000,
  renderDeadlineMs: 1000,
  maxTextLength: 64 * 1024,
  maxValueBytes: 1024 * 1024,
  maxDepth: 64,
  heapMb: 128,
  maxCrashes: 3,
  crashWindowMs: 60_000,
  backoffMs: Object.freeze([0, 250, 1000]),
  dedicatedWorkers: 32,
  pluginsPerWorker: 8,
});

/** A limit given that is not a positive number. */
export class PluginLimitInvalid extends RangeError {
  readonly limit: string;
  constructor(limit: string, value: unknown) {
    super(`plugin limit ${limit} must be a positive number, got ${JSON.stringify(value) ?? String(value)}`);
    this.limit = limit;
  }
}

/** The limits given (undefined: the default), checked, in one frozen object. */
export function resolvePluginLimits(given: Partial<PluginLimits> = {}): PluginLimits {
  const names = Object.keys(pluginLimitDefaults) as Array<keyof PluginLimits>;
  const resolved = names.map((name) => [name, checkedLimit(name, given[name] ?? pluginLimitDefaults[name])]);
  return Object.freeze(Object.fromEntries(resolved)) as PluginLimits;
}

/** A limit's value if it is valid (an array frozen as a copy); throws `PluginLimitInvalid` if not. */
function checkedLimit(name: keyof PluginLimits, value: unknown): unknown {
  // No dedicated worker at all is valid: every plugin shares one.
  const isValid =
    name === "backoffMs"
      ? Array.isArray(value) && value.length > 0 && value.every((ms) => typeof ms === "number" && ms >= 0)
      : typeof value === "number" && (value > 0 || (name === "dedicatedWorkers" && value === 0));
  if (!isValid) throw new PluginLimitInvalid(name, value);
  return Array.isArray(value) ? Object.freeze([...value]) : value;
}
