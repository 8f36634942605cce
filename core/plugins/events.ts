// The plugin set's public record types (events, the active list, a load's timings), apart
// from the plugin set so that a host's API names them without its implementation.

import type { Diagnostic } from "../base/diagnostics.ts";

/** What the host reports: diagnostics and generation changes, in order. */
export type PluginEvent =
  | { readonly kind: "diagnostic"; readonly diagnostic: Diagnostic }
  | ({ readonly kind: "activated"; readonly timings: LoadTimings } & OfGeneration)
  | { readonly kind: "removed"; readonly plugin: string; readonly file: string }
  /**
   * The files bundle to the active generation again (an undo after a broken save): that failure is
   * cleared.
   */
  | ({ readonly kind: "restored" } & OfGeneration);

/** Which generation of which plugin file an event is about. */
type OfGeneration = { readonly plugin: string; readonly file: string; readonly generation: number };

/** Where one load's time went, in ms. */
export interface LoadTimings {
  /** From the load's start to its generation being swapped in. */
  readonly loadMs: number;
  readonly bundleMs: number;
  readonly evaluateMs: number;
  readonly setupMs: number;
  /**
   * From the generation being ready to it being swapped in (waiting for earlier plugins, the
   * registry swap).
   */
  readonly swapMs: number;
}

/**
 * Where a plugin came from: a plugin folder (or the folder of a plugin file) named in
 * `plugins`, or an installed plugin package (decision 130).
 */
export type PluginOrigin =
  | { readonly kind: "folder"; readonly folder: string }
  | { readonly kind: "package"; readonly name: string; readonly version: string; readonly root: string };

/**
 * What a source's loader last returned: a value, `absent` (nothing to tell) or `unavailable`
 * (cannot tell now).
 */
export type ObservedKind = "value" | "absent" | "unavailable";

/** An active plugin, as `plugins()` lists it. */
export interface PluginInfo {
  readonly name: string;
  readonly file: string;
  /** The folder or package (with its version) it was loaded from. */
  readonly origin: PluginOrigin;
  readonly generation: number;
  readonly keys: readonly string[];
  /**
   * What each key's loader returned at its last observation without a fault (any session); a key
   * not yet observed is missing.
   */
  readonly observed: Readonly<Record<string, ObservedKind>>;
  /** How long the load that built this generation took (bundle, evaluate, setup, swap), in ms. */
  readonly loadMs: number;
}
