/**
 * context-host/plugin, for plugin authors: `definePlugin`, the `SystemContext` loader
 * values (`unavailable`, `absent`) and the types `setup` and a source work with.
 *
 * This entry is the plugin API module itself (`plugins/api.ts`): a plugin bundle that
 * imports `context-host/plugin` (or `context-host`) inside a host gets exactly these
 * names, from the host's single copy.
 *
 * @module
 */

export * from "./plugins/api.ts";
