// Owns the System Context values a plugin loader returns besides a value: the
// `SystemContext` namespace of the plugin API.

export { type Absent, absent, type Loaded, type Unavailable, unavailable } from "../system-context/source.ts";
