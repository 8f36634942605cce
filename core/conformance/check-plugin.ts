// Owns `check` of one plugin file: load it as the host loads a plugin (bundle →
// evaluate → activate, refusing the namespaces the host's built-in sources own), check
// the definition, that setup runs again cleanly in a new generation, that nothing starts
// at import time or keeps running after dispose and that disposers settle within the
// host's deadline, then run the source checks on every source. Findings carry the file,
// line and column where the plugin's code threw, when it did.

import path from "node:path";
import { asValue, createContainer } from "awilix";
import { silentLogger, systemClock } from "../base/clock.ts";
import { DeadlineExceeded, withinDeadline } from "../base/deadline.ts";
import { escapeControl } from "../base/diagnostics.ts";
import { messageOf } from "../base/errors.ts";
import { builtinNamespaces } from "../host/context-sources.ts";
import { bundlePlugin, type PluginBundle } from "../plugins/bundle.ts";
import { evaluateBundle } from "../plugins/evaluate.ts";
import { type ActivatedGeneration, activateGeneration, pluginOf } from "../plugins/generation.ts";
import { BundleLocations } from "../plugins/locations.ts";
import { type CheckHooks, type FindingLocation, keepingAlive } from "./progress.ts";
import type { CheckName } from "./rules.ts";
import { type CheckedSource, checkSourceWith, type Finding } from "./source-checks.ts";

export type { CheckName } from "./rules.ts";
/** Checks of the plugin as a whole, besides the per-source ones. */
export type PluginCheckName = "plugin-loads" | "setup-repeats" | "import-side-effects" | "dispose-releases";

/** One finding of `check`. */
export interface PluginFinding {
  /** The plugin's file, or the file of its own where the error was thrown. */
  readonly file: string;
  readonly line?: number;
  /** 0-based, as diagnostics keep it (printed 1-based). */
  readonly column?: number;
  /** The line of code at `line`, for a code frame. */
  readonly lineText?: string;
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
  /** Default loader deadline, ms (the host's default 2000; a source's own `deadlineMs` wins). */
  readonly deadlineMs?: number;
  /** How long module code and setup may run, ms (the host's default 10 000). */
  readonly setupDeadlineMs?: number;
  /** How long a generation's disposers may run, ms (the host's default 5000). */
  readonly disposeDeadlineMs?: number;
  /** How long the renderers of one boundary may run, ms (the host's default 1000). */
  readonly renderDeadlineMs?: number;
  /** Longest accepted rendering (the host's default 64 KiB). */
  readonly maxTextLength?: number;
  /** Largest accepted value, UTF-8 bytes of its JSON (the host's default 1 MiB). */
  readonly maxValueBytes?: number;
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

/** A request in flight (a file's read or close, say): it ends by itself, unlike a timer or a handle. */
const isRequest = (kind: string) => kind.endsWith("Req") || kind.startsWith("FSReq");

/**
 * What still runs, after every generation was disposed, that did not at `before`. A request
 * in flight is looked at again for a while (on a busy machine the close of a file read a
 * moment ago can still be pending): only one that does not end counts, with every timer and
 * handle. (What importing a module starts counts at once, requests included.)
 */
async function stillRunning(before: Map<string, number>): Promise<string[]> {
  await settle();
  for (let turn = 0; turn < 50; turn++) {
    const after = resources();
    if (![...after].some(([kind, n]) => isRequest(kind) && n > (before.get(kind) ?? 0))) break;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return grown(before, resources());
}

/** Before its definition is read, a plugin is known by its file's (or, for `index`, its folder's) name, as diagnostics do. */
export function provisionalPluginName(file: string): string {
  const base = path.basename(file).replace(/\.(ts|js)$/, "");
  return base === "index" ? path.basename(path.dirname(file)) : base;
}

/** Checks one plugin file; findings in check order. Never throws for anything the plugin does. */
export function checkPlugin(file: string, options: CheckPluginOptions = {}): Promise<PluginFinding[]> {
  return runPluginChecks(file, options, {});
}

/**
 * `checkPlugin` telling `hooks` the step under way and each finding as it is made (the
 * isolated check's worker posts them, so its runner can name what never returned).
 * @internal
 */
export function runPluginChecks(
  file: string,
  options: CheckPluginOptions,
  hooks: Omit<CheckHooks<PluginFinding>, "locate">,
): Promise<PluginFinding[]> {
  return keepingAlive(() => checkInThisThread(file, options, hooks));
}

async function checkInThisThread(
  file: string,
  options: CheckPluginOptions,
  hooks: Omit<CheckHooks<PluginFinding>, "locate">,
): Promise<PluginFinding[]> {
  const findings: PluginFinding[] = [];
  let plugin = provisionalPluginName(file);
  let locate: (error: unknown) => FindingLocation | undefined = () => undefined;
  const add = (finding: Omit<PluginFinding, "file" | "plugin">, location?: FindingLocation) => {
    const at =
      location === undefined
        ? {}
        : {
            line: location.line,
            column: location.column,
            ...(location.lineText === undefined ? {} : { lineText: location.lineText }),
          };
    const full: PluginFinding = { file: location?.file ?? file, plugin, ...finding, ...at };
    findings.push(full);
    hooks.finding?.(full);
  };
  const setupDeadlineMs = options.setupDeadlineMs ?? 10_000;
  const container = createContainer();
  container.register({
    clock: asValue(systemClock),
    logger: asValue(silentLogger),
    location: asValue(options.location ?? process.cwd()),
  });
  // Evaluate and activate stay apart here (not `loadGeneration`): import-side-effects measures between them.
  const reservedNamespaces = new Set(builtinNamespaces);
  const load = async (bundle: PluginBundle, generation: number) => {
    const locations = new BundleLocations(bundle, generation);
    // It never throws (`BundleLocations.locate`).
    locate = (error) => locations.locate(error);
    const before = resources();
    hooks.step?.({ kind: "evaluate", generation, ms: setupDeadlineMs });
    const exports = evaluateBundle(bundle, generation);
    hooks.step?.({ kind: "checks" });
    await settle();
    const afterImport = grown(before, resources());
    hooks.step?.({ kind: "setup", generation, ms: setupDeadlineMs });
    try {
      // The host refuses a plugin named for a built-in source's namespace (`instructions`): so does check.
      const plugin = pluginOf(exports, reservedNamespaces);
      const config = options.settings === undefined ? options.pluginSettings?.[plugin.name] : options.settings;
      const activated = await activateGeneration({ plugin, config, generation, container, setupDeadlineMs });
      return { activated, afterImport, before };
    } finally {
      hooks.step?.({ kind: "checks" });
    }
  };

  let bundle: PluginBundle;
  let first: Awaited<ReturnType<typeof load>>;
  try {
    bundle = await bundlePlugin(file);
    first = await load(bundle, 1);
  } catch (error) {
    const bundled = (error as { location?: { file?: string; line?: number; column?: number; lineText?: string } }).location;
    const named = (error as { plugin?: unknown }).plugin;
    if (typeof named === "string") plugin = named;
    const location =
      bundled?.line === undefined
        ? locate(error)
        : { file: bundled.file ?? file, line: bundled.line, column: bundled.column ?? 0, lineText: bundled.lineText };
    add(
      {
        check: "plugin-loads",
        severity: "error",
        ...((error as { key?: string }).key === undefined ? {} : { key: (error as { key: string }).key }),
        message: `the plugin does not load: ${messageOf(error)}`,
        fix:
          error instanceof DeadlineExceeded || (error as { cause?: unknown }).cause instanceof DeadlineExceeded
            ? `let setup settle within ${setupDeadlineMs} ms: start slow work in loaders, not in setup`
            : "fix what the message names; `context-host render --plugins` shows the same error with its code frame",
      },
      location,
    );
    await container.dispose();
    return findings;
  }
  plugin = first.activated.name;
  hooks.named?.(plugin);
  if (first.afterImport.length > 0) {
    add({
      check: "import-side-effects",
      severity: "error",
      message: `importing the module started ${first.afterImport.join(", ")}`,
      fix: "start timers, watchers and connections in setup and release them with api.onDispose",
    });
  }

  const firstLocate = locate;
  for (const source of first.activated.sources) {
    await checkSourceWith(
      source as CheckedSource,
      {
        env: { location: options.location ?? process.cwd() },
        deadlineMs: source.deadlineMs ?? options.deadlineMs ?? 2000,
        maxTextLength: options.maxTextLength ?? 64 * 1024,
        ...(options.maxValueBytes === undefined ? {} : { maxValueBytes: options.maxValueBytes }),
        ...(options.renderDeadlineMs === undefined ? {} : { renderDeadlineMs: options.renderDeadlineMs }),
        ...(options.samples === undefined ? {} : { samples: options.samples }),
        ...(options.seed === undefined ? {} : { seed: options.seed }),
      },
      {
        locate: firstLocate,
        finding: ({ location, ...finding }: Finding) => add(finding, location),
        ...(hooks.step === undefined ? {} : { step: hooks.step }),
      },
    );
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
    add(
      {
        check: "setup-repeats",
        severity: "error",
        message: `setup fails in a second generation: ${messageOf(error)}`,
        fix: "release in api.onDispose whatever setup takes (ports, files, globals), so a reload can take it again",
      },
      locate(error),
    );
  }

  const disposeDeadlineMs = options.disposeDeadlineMs ?? 5000;
  for (const [index, generation] of [first, second].entries()) {
    if (generation === undefined) continue;
    const { scope } = generation.activated;
    hooks.step?.({ kind: "dispose", generation: index + 1, ms: disposeDeadlineMs });
    try {
      await withinDeadline(() => scope.close(), disposeDeadlineMs, `disposers of ${scope.name}`);
    } catch (error) {
      const errors = (error as { errors?: unknown[] }).errors;
      add(
        {
          check: "dispose-releases",
          severity: "error",
          message:
            error instanceof DeadlineExceeded
              ? `the disposers of generation ${index + 1} did not settle within ${disposeDeadlineMs} ms`
              : `a disposer threw: ${messageOf(errors?.[0] ?? error)}`,
          fix:
            error instanceof DeadlineExceeded
              ? `let every disposer settle within ${disposeDeadlineMs} ms (close with a timeout; do not await what may never end)`
              : "make disposers total",
        },
        index === 0 ? firstLocate(errors?.[0] ?? error) : locate(errors?.[0] ?? error),
      );
    } finally {
      hooks.step?.({ kind: "checks" });
    }
  }
  const left = await stillRunning(first.before);
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

/**
 * One printable finding: `file:line:column [plugin key] check: what is wrong — how to fix it`,
 * then, when the plugin's own code threw, the line and a caret under the column (the code
 * frame `render` prints for the same error). Control characters escaped.
 */
export function formatFinding(finding: PluginFinding, cwd = process.cwd()): string {
  const where = escapeControl(finding.file.startsWith(`${cwd}/`) ? finding.file.slice(cwd.length + 1) : finding.file);
  const line =
    finding.line === undefined ? "" : `:${finding.line}${finding.column === undefined ? "" : `:${finding.column + 1}`}`;
  const key = finding.key === undefined ? "" : ` ${escapeControl(finding.key)}`;
  const level = finding.severity === "warning" ? " (warning)" : "";
  const head = `${where}${line} [${escapeControl(finding.plugin)}${key}] ${finding.check}${level}: ${escapeControl(finding.message)} — ${finding.fix}`;
  if (finding.line === undefined || finding.lineText === undefined) return head;
  const gutter = `${finding.line} | `;
  const caret = `${" ".repeat(gutter.length - 2)}| ${" ".repeat(Math.max(0, finding.column ?? 0))}^`;
  return `${head}\n${gutter}${escapeControl(finding.lineText)}\n${caret}`;
}
