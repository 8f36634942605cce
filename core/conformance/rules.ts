// Owns the one list of conformance rules: what `context-host check` and
// `describePluginConformance` hold a plugin to, in the order they run, and for each rule
// the host's diagnostic phases it finds before shipping (check ⊇ host: every phase the host
// reports about a plugin at run time has a rule; test/conformance/pairing.test.ts holds it).

import type { DiagnosticPhase } from "../base/diagnostics.ts";

/** Every rule, by the name its findings print. */
export type CheckName =
  | "plugin-loads"
  | "import-side-effects"
  | "setup-repeats"
  | "dispose-releases"
  | "loader-settles"
  | "value-schema"
  | "round-trip"
  | "volatile-value"
  | "removal-renderer"
  | "renderer-throws"
  | "renderer-text"
  | "renderer-settles"
  | "renderer-pure"
  | "renderer-mutates"
  | "renderer-clock"
  | "update-new-state"
  | "update-repeats-previous";

/**
 * The phases of a plugin's diagnostics. The host's others are about instruction files, the
 * watcher, MCP servers (`connect`, `list`, `subscribe`, `read`: no plugin code runs there),
 * and a plugin package's manifest (`package`: not installed, a peer range of context-host not
 * met, a declared file missing), which `check PACKAGE` reports before any rule runs, failing
 * it (decision 132).
 */
export type PluginPhase = Exclude<
  DiagnosticPhase,
  "instructions" | "watch" | "package" | "connect" | "list" | "subscribe" | "read"
>;

/** One conformance rule. */
export interface ConformanceRule {
  readonly name: CheckName;
  /** An `error` fails `check` (exit 1) and its test case; a `warning` does not (unless `strict`). */
  readonly severity: "error" | "warning";
  /** What a conforming plugin does. */
  readonly holds: string;
  /**
   * The host's diagnostic phases whose problems this rule reports before shipping; empty for a
   * rule about what the host cannot see at run time (a stale cached prefix, a leak).
   */
  readonly phases: readonly PluginPhase[];
}

const renderers: readonly PluginPhase[] = ["baseline", "update", "removed"];

/** Every rule, in the order `check` runs them and `describePluginConformance` declares them. */
export const conformanceRules: readonly ConformanceRule[] = Object.freeze([
  {
    name: "plugin-loads",
    severity: "error",
    holds:
      "the module bundles and runs, default-exports a valid definition, its config accepts the settings, and setup settles within its deadline declaring valid keys in its own namespace",
    phases: ["bundle", "evaluate", "config", "setup", "namespace"],
  },
  { name: "import-side-effects", severity: "error", holds: "importing the module starts no timer or handle", phases: [] },
  {
    name: "setup-repeats",
    severity: "error",
    holds: "setup runs again in a new generation (a reload) and declares the same sources",
    phases: ["setup"],
  },
  {
    name: "dispose-releases",
    severity: "error",
    holds: "disposers settle within their deadline without throwing and release every timer and handle",
    phases: ["dispose"],
  },
  {
    name: "loader-settles",
    severity: "error",
    holds: "each loader returns or resolves within its deadline, without throwing and without stopping its worker",
    phases: ["load"],
  },
  {
    name: "value-schema",
    severity: "error",
    holds:
      "each loaded value passes its schema strictly (nothing converted) and encodes to plain JSON within the host's size and depth limits",
    phases: ["value"],
  },
  {
    name: "round-trip",
    severity: "error",
    holds: "the codec is lossless: decode(encode(v)) equals v for every value the schema accepts",
    phases: [],
  },
  { name: "volatile-value", severity: "warning", holds: "a value does not change between loads by itself", phases: [] },
  {
    name: "removal-renderer",
    severity: "warning",
    holds: "a source whose loader returns SystemContext.absent has a removed renderer",
    phases: [],
  },
  { name: "renderer-throws", severity: "error", holds: "renderers are total over the schema's values", phases: renderers },
  {
    name: "renderer-text",
    severity: "error",
    holds: "renderers return non-empty, well-formed text within the host's length limit",
    phases: renderers,
  },
  {
    name: "renderer-settles",
    severity: "error",
    holds: "renderers return within the host's render deadline, without stopping their worker",
    phases: renderers,
  },
  { name: "renderer-pure", severity: "error", holds: "the same input renders the same text", phases: [] },
  { name: "renderer-mutates", severity: "error", holds: "renderers leave their input unchanged", phases: [] },
  { name: "renderer-clock", severity: "error", holds: "renderers read no clock and no randomness", phases: [] },
  {
    name: "update-new-state",
    severity: "error",
    holds: "an update says the newly effective state, every part of it",
    phases: [],
  },
  {
    name: "update-repeats-previous",
    severity: "error",
    holds: "an update renders the current value, not the previous one",
    phases: [],
  },
] satisfies ConformanceRule[]);

/** Every rule's name, in the order `check` runs them. */
export const checkNames: readonly CheckName[] = Object.freeze(conformanceRules.map((rule) => rule.name));

/** The rules that answer for a host diagnostic of `phase`. */
export function rulesForPhase(phase: DiagnosticPhase): readonly ConformanceRule[] {
  return conformanceRules.filter((rule) => (rule.phases as readonly DiagnosticPhase[]).includes(phase));
}
