// Owns `check` of one plugin file: load it as the host loads a plugin (bundle →
// evaluate → activate, refusing the namespaces the host's built-in sources own), check
// the definition, that setup runs again cleanly in a new generation, that nothing starts
// at import time or keeps running after dispose, then run the source checks on every
// source. Findings carry the plugin's file.

import path from "node:path";
import { asValue, createContainer } from "awilix";
import { silentLogger, systemClock } from "../base/clock.ts";
import { messageOf } from "../base/errors.ts";
import { builtinNamespaces } from "../host/context-sources.ts";
import { bundlePlugin, type PluginBundle } from "../plugins/bundle.ts";
import { evaluateBundle } from "../plugins/evaluate.ts";
import { type ActivatedGeneration, activateGeneration } from "../plugins/generation.ts";
import { type CheckedSource, checkSource, type CheckName as SourceCheckName } from "./source-checks.ts";

/** Checks of the plugin as a whole, besides the per-source ones. */
export type PluginCheckName = "plugin-loads" | "setup-repeats" | "import-side-effects" | "dispose-releases";
/** Every check `context-host check` runs, by the name its findings print. */
export type CheckName = PluginCheckName | SourceCheckName;

/** One finding of `check`. */
export interface PluginFinding {
  readonly file: string;
  readonly line?: number;
  readonly plugin: string;
  readonly key?: string;
  readonly check: CheckName;
  readonly severity: "error" | "warning";
  readonly message: string;
  readonly fix: string;
}

/** How `checkPlugin` loads and drives a plugin. */
export interface CheckPluginOptions {
  /** The location loaders observe (default the working folder). */
  readonly location?: string;
  /** This plugin's settings (checked against its `config` schema). */
  readonly settings?: unknown;
  /** Settings by plugin name, as a host's `pluginSettings` (a settings file's); `settings` wins when given. */
  readonly pluginSettings?: Readonly<Record<string, unknown>>;
  readonly deadlineMs?: number;
  readonly setupDeadlineMs?: number;
  readonly maxTextLength?: number;
  readonly samples?: number;
  readonly seed?: number;
}

/** Timers and handles this process holds, by kind: what a generation leaves running shows here. */
function resources(): Map<string, number> {
  const counts = new Map<string, number>();
  for (const kind of process.getActiveResourcesInfo()) counts.set(kind, (counts.get(kind) ?? 0) + 1);
  return counts;
}

function grown(before: Map<string, number>, after: Map<string, number>): string[] {
  return [...after]
    .filter(([kind, n]) => n > (before.get(kind) ?? 0))
    .map(([kind, n]) => `${n - (before.get(kind) ?? 0)} ${kind}`);
}

/** Lets timers a plugin just started register, and finished work settle. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

/** Before its definition is read, a plugin is known by its file's (or, for `index`, its folder's) name, as diagnostics do. */
export function provisionalPluginName(file: string): string {
  const base = path.basename(file).replace(/\.(ts|js)$/, "");
  return base === "index" ? path.basename(path.dirname(file)) : base;
}

/** Checks one plugin file; findings in check order. Never throws for anything the plugin does. */
export async function checkPlugin(file: string, options: CheckPluginOptions = {}): Promise<PluginFinding[]> {
  const findings: PluginFinding[] = [];
  let plugin = provisionalPluginName(file);
  const add = (finding: Omit<PluginFinding, "file" | "plugin">) => findings.push({ file, plugin, ...finding });
  const container = createContainer();
  container.register({
    clock: asValue(systemClock),
    logger: asValue(silentLogger),
    location: asValue(options.location ?? process.cwd()),
  });
  // Evaluate and activate stay apart here (not `loadGeneration`): import-side-effects measures between them.
  const reservedNamespaces = new Set(builtinNamespaces);
  const load = async (bundle: PluginBundle, generation: number) => {
    const before = resources();
    const exports = evaluateBundle(bundle, generation);
    await settle();
    const afterImport = grown(before, resources());
    const activated = await activateGeneration({
      exports,
      generation,
      container,
      settings:
        options.settings === undefined ? (options.pluginSettings ?? {}) : { [pluginNameOf(exports) ?? ""]: options.settings },
      setupDeadlineMs: options.setupDeadlineMs ?? 10_000,
      // The host refuses a plugin named for a built-in source's namespace (`instructions`): so does check.
      reservedNamespaces,
    });
    return { activated, afterImport, before };
  };

  let bundle: PluginBundle;
  let first: Awaited<ReturnType<typeof load>>;
  try {
    bundle = await bundlePlugin(file);
    first = await load(bundle, 1);
  } catch (error) {
    const location = (error as { location?: { line?: number } }).location;
    const named = (error as { plugin?: unknown }).plugin;
    if (typeof named === "string") plugin = named;
    add({
      check: "plugin-loads",
      severity: "error",
      ...(location?.line === undefined ? {} : { line: location.line }),
      ...((error as { key?: string }).key === undefined ? {} : { key: (error as { key: string }).key }),
      message: `the plugin does not load: ${messageOf(error)}`,
      fix: "fix what the message names; `context-host render --plugins` shows the same error with its code frame",
    });
    await container.dispose();
    return findings;
  }
  plugin = first.activated.name;
  if (first.afterImport.length > 0) {
    add({
      check: "import-side-effects",
      severity: "error",
      message: `importing the module started ${first.afterImport.join(", ")}`,
      fix: "start timers, watchers and connections in setup and release them with api.onDispose",
    });
  }

  for (const source of first.activated.sources) {
    const sourceFindings = await checkSource(source as CheckedSource, {
      env: { location: options.location ?? process.cwd() },
      deadlineMs: source.deadlineMs ?? options.deadlineMs ?? 2000,
      maxTextLength: options.maxTextLength ?? 64 * 1024,
      ...(options.samples === undefined ? {} : { samples: options.samples }),
      ...(options.seed === undefined ? {} : { seed: options.seed }),
    });
    for (const finding of sourceFindings) add(finding);
  }

  // A new generation of the same bundle, as a reload makes it: the same sources, cleanly.
  const keysOf = (generation: ActivatedGeneration) => generation.sources.map((s) => s.key).join(", ");
  let second: Awaited<ReturnType<typeof load>> | undefined;
  try {
    second = await load(bundle, 2);
    if (keysOf(second.activated) !== keysOf(first.activated)) {
      add({
        check: "setup-repeats",
        severity: "error",
        message: `a second generation declares ${keysOf(second.activated) || "no sources"}, the first ${keysOf(first.activated) || "none"}`,
        fix: "declare the same sources on every setup; keep no state across generations outside api.onDispose",
      });
    }
  } catch (error) {
    add({
      check: "setup-repeats",
      severity: "error",
      message: `setup fails in a second generation: ${messageOf(error)}`,
      fix: "release in api.onDispose whatever setup takes (ports, files, globals), so a reload can take it again",
    });
  }

  for (const generation of [first, second]) {
    if (generation === undefined) continue;
    try {
      await generation.activated.scope.close();
    } catch (error) {
      add({
        check: "dispose-releases",
        severity: "error",
        message: `a disposer threw: ${messageOf(error)}`,
        fix: "make disposers total",
      });
    }
  }
  await settle();
  const left = grown(first.before, resources());
  if (left.length > 0) {
    add({
      check: "dispose-releases",
      severity: "error",
      message: `after every generation was disposed, ${left.join(", ")} still run`,
      fix: "clear every timer and close every handle setup starts, in api.onDispose",
    });
  }
  await container.dispose();
  return findings;
}

function pluginNameOf(exports: Record<string, unknown>): string | undefined {
  const candidate = exports.default as { name?: unknown } | undefined;
  return typeof candidate?.name === "string" ? candidate.name : undefined;
}

/** One printable line: `file:line [plugin key] check: what is wrong — how to fix it`. */
export function formatFinding(finding: PluginFinding, cwd = process.cwd()): string {
  const where = finding.file.startsWith(`${cwd}/`) ? finding.file.slice(cwd.length + 1) : finding.file;
  const line = finding.line === undefined ? "" : `:${finding.line}`;
  const key = finding.key === undefined ? "" : ` ${finding.key}`;
  const level = finding.severity === "warning" ? " (warning)" : "";
  return `${where}${line} [${finding.plugin}${key}] ${finding.check}${level}: ${finding.message} — ${finding.fix}`;
}
