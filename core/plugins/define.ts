// Owns the plugin author's API: `definePlugin` and what `setup` receives (the host services included).

import type { StaticDecode, TSchema } from "typebox";
import type { Clock, Logger } from "../base/clock.ts";
import type { Disposer } from "../base/scope.ts";
import type { SourceEnv } from "../registry/registry.ts";
import type { Key, Loaded } from "../system-context/index.ts";

/** A plugin's Context Source: like a core source, but its loader gets the boundary's env. */
export interface PluginSource<S extends TSchema = TSchema> {
  /** `pluginName/name`: every key starts with the plugin's namespace. */
  readonly key: Key;
  /** TypeBox schema: the value's JSON codec. */
  readonly schema: S;
  /** Observes the value for the session's location. May return `unavailable` or `absent`. */
  load(env: SourceEnv): Loaded<StaticDecode<S>> | Promise<Loaded<StaticDecode<S>>>;
  baseline(current: StaticDecode<S>): string;
  update(previous: StaticDecode<S>, current: StaticDecode<S>): string;
  removed?(previous: StaticDecode<S>): string;
  /** How long the loader may take before it counts as unavailable (default: the host's, 2 s). */
  readonly deadlineMs?: number;
  /** Values `context-host check` renders besides the loaded and generated ones (for precise checks). */
  readonly examples?: readonly StaticDecode<S>[];
}

/** Services every plugin generation can resolve from its own awilix scope (`api.services.clock`, …). */
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

/** What `setup` receives. */
export interface PluginApi<Config = undefined> {
  /** The plugin's namespace. */
  readonly name: string;
  /** Registers a Context Source for this generation. */
  source<S extends TSchema>(source: PluginSource<S>): void;
  /** Runs when this generation is replaced or removed (newest first). */
  onDispose(disposer: Disposer): void;
  /** Host services from this generation's own awilix scope. */
  readonly services: PluginServices<Config>;
}

const pluginBrand = Symbol.for("context-host/plugin");

/** A plugin definition, as a plugin module default-exports it. */
export interface Plugin<Config = unknown> {
  readonly [pluginBrand]: true;
  readonly name: string;
  readonly config?: TSchema;
  setup(api: PluginApi<Config>, config: Config): void | Promise<void>;
}

/**
 * Defines a plugin. `name` is its namespace (`core` is reserved); `config` is an
 * optional TypeBox schema for its settings, checked before `setup` runs.
 *
 * ```ts
 * export default definePlugin({
 *   name: "weather",
 *   config: Type.Object({ city: Type.String() }),
 *   setup(api, config) {
 *     api.source({ key: "weather/today", schema: Type.String(), load: () => "sunny", ... });
 *   },
 * });
 * ```
 */
export function definePlugin<const C extends TSchema>(definition: {
  readonly name: string;
  readonly config: C;
  setup(api: PluginApi<StaticDecode<C>>, config: StaticDecode<C>): void | Promise<void>;
}): Plugin<StaticDecode<C>>;
export function definePlugin(definition: {
  readonly name: string;
  setup(api: PluginApi<undefined>, config: undefined): void | Promise<void>;
}): Plugin<undefined>;
export function definePlugin(definition: Omit<Plugin<never>, typeof pluginBrand>): Plugin<never> {
  return Object.freeze({ ...definition, [pluginBrand]: true as const });
}

/** Whether a module's default export is a plugin made by `definePlugin`. */
export function isPlugin(value: unknown): value is Plugin {
  if (typeof value !== "object" || value === null) return false;
  return (value as Record<symbol, unknown>)[pluginBrand] === true;
}
