// Owns the plugin author's API: everything a plugin bundle gets when it imports
// `context-host` (or `context-host/plugin`), and nothing else. A plugin cannot reach
// the host, the store or the session runtime through it.

export type { Clock, Logger } from "../base/clock.ts";
export type { SourceEnv } from "../registry/registry.ts";
export { absent, type Json, type Key, type Loaded, unavailable } from "../system-context/index.ts";
export { definePlugin, type Plugin, type PluginApi, type PluginSource } from "./define.ts";
export type { PluginServices } from "./services.ts";
/** The System Context values a loader may return: `SystemContext.unavailable`, `SystemContext.absent`. */
export * as SystemContext from "./values.ts";
