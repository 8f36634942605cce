// Owns the plugin author's API: everything a plugin bundle gets when it imports
// `context-host` (or `context-host/plugin`), and nothing else. A plugin cannot reach
// the host, the store or the session runtime through it.

export type { Clock, Logger } from "../base/clock.ts";
export type { SourceEnv } from "../registry/registry.ts";
// From the modules themselves, not the layer's index: a plugin worker evaluates only what it needs.
export type { Json } from "../system-context/json.ts";
export type { Key } from "../system-context/key.ts";
export { absent, type Loaded, unavailable } from "../system-context/source.ts";
export { definePlugin, type Plugin, type PluginApi, type PluginServices, type PluginSource } from "./define.ts";
/** The System Context values a loader may return: `SystemContext.unavailable`, `SystemContext.absent`. */
export * as SystemContext from "./values.ts";
