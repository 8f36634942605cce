// Owns the options a Host and a context engine share: their type, the checks of the
// plugin entries given, how diagnostics are reported, and which options decide the
// Context Sources.

import { statSync } from "node:fs";
import type { Clock, Logger } from "../base/clock.ts";
import { type Diagnostic, type Diagnostics, formatDiagnostic } from "../base/diagnostics.ts";
import { SettingInvalid } from "../base/errors.ts";
import type { Scope } from "../base/scope.ts";
import type { McpServersSettings } from "../mcp/settings.ts";
import { readPluginEntry } from "../plugins/find.ts";
import type { Provider } from "../session/provider.ts";
import type { SessionLimits } from "../session/reply-check.ts";
import type { Tool, ToolSpec } from "../session/runtime.ts";
import type { SessionStore } from "../session/store/store.ts";
import type { CoreSource } from "../sources/core-source.ts";
import type { InstructionSettings } from "../sources/instructions/service.ts";
import type { startContextSources } from "./context-sources.ts";
/** Options of `createHost`. */
export interface HostOptions {
  /** Data folder; the SQLite file is `<dataDir>/sessions.db`. Default `.context-host` in the working folder. */
  readonly dataDir?: string;
  /** Model APIs by name. */
  readonly providers: Readonly<Record<string, Provider>>;
  /** Host system prompt, sent before the Baseline. */
  readonly systemPrompt?: string;
  /** Core Context Sources, in order. */
  readonly core?: readonly CoreSource[];
  /**
   * Where plugins are: folders of plugins, plugin files, and names of plugin packages
   * installed in the working folder's `node_modules` (resolved as Node resolves packages).
   * They replace the default `plugins/` folder of the working folder; a folder or file given
   * must exist.
   */
  readonly plugins?: readonly string[];
  /** Each new distinct diagnostic, once (default: printed to stderr with `formatDiagnostic`; `false`: nowhere). */
  readonly onDiagnostic?: ((diagnostic: Diagnostic) => void) | false;
  /** Hot reload plugins on file changes (default true). */
  readonly watch?: boolean;
  /** The host project: relative `plugins` entries and plugin package names resolve from it (default: the working folder). */
  readonly projectRoot?: string;
  /** Host tools the model may call: a function, or `{ run, deadlineMs }` for a tool with its own deadline. */
  readonly tools?: Readonly<Record<string, Tool | ToolSpec>>;
  /** Deadline of a tool call unless the tool sets its own (default 60 s); a missed one is stored as an error result. */
  readonly toolDeadlineMs?: number;
  /** In-flight lease of a provider call across processes (default 30 s, renewed while the call runs). */
  readonly leaseMs?: number;
  /**
   * How long `close()` lets the steps in flight finish and store their replies (default 5 s);
   * then their provider calls are aborted and their leases released, and they reject with
   * `HostClosed`.
   */
  readonly closeTimeoutMs?: number;
  /** Size limits in UTF-8 bytes: `promptBytes`, `toolResultBytes`, `sourceValueBytes` (each 1 MiB by default). */
  readonly limits?: SessionLimits;
  /** Plugin settings by plugin name, checked against each plugin's `config` schema. */
  readonly pluginSettings?: Readonly<Record<string, unknown>>;
  readonly clock?: Clock;
  readonly logger?: Logger;
  /** A store other than the default SQLite file. */
  readonly store?: SessionStore;
  /** Plugin reload debounce (default 50 ms). */
  readonly debounceMs?: number;
  /** Default plugin loader deadline (default 2 s). */
  readonly deadlineMs?: number;
  /** How long a plugin's module code and `setup` may run (default 10 s). */
  readonly setupDeadlineMs?: number;
  /** How long a plugin generation's disposers may run (default 5 s). */
  readonly disposeDeadlineMs?: number;
  /** IANA time zone of `core/date`; host-local when unset. */
  readonly timeZone?: string;
  /** The instruction service: global file, project discovery switch, size limit. */
  readonly instructions?: InstructionSettings;
  /** Register the built-in core sources (`core/date`, `core/environment`, instructions). Default true. */
  readonly builtins?: boolean;
  /**
   * Where plugin code runs: `"worker"` (default), each plugin in its own worker
   * thread, so no plugin can freeze, crash or corrupt the host; `"none"`, in the host's own
   * process, for trusted first-party plugins and comparison benchmarks.
   */
  readonly isolation?: "worker" | "none";
  /**
   * With `isolation: "worker"`: how many plugins get a worker thread of their own (default 32).
   * Plugins beyond them share workers of `pluginsPerWorker` (default 8), each in its own realm;
   * a plugin that stops a shared worker (a missed deadline, a crash) stops its mates with it,
   * and runs alone from then on.
   */
  readonly dedicatedWorkers?: number;
  readonly pluginsPerWorker?: number;
  /**
   * MCP servers whose resources and instructions are Context Sources, keyed `mcp/<server>/<name>`
   * and `mcp/<server>/instructions`: `{ command, args?, env?, cwd? }` (stdio) or `{ url, headers? }`
   * (Streamable HTTP), each with `resources?` (URIs, `{ template, arguments }`, or `"*"`) and
   * `instructions?`. Read at Safe Provider-Turn Boundaries only. Needs `@modelcontextprotocol/client`.
   */
  readonly mcpServers?: McpServersSettings;
}

/**
 * @internal
 * Each plugin folder or file given explicitly must exist: a typo would otherwise start a host
 * without its plugins, silently. A package name is looked up when plugins load (a missing
 * package is a diagnostic that clears once it is installed).
 */
export function checkPluginFolders(entries: readonly string[], projectRoot: string): void {
  for (const [index, entry] of entries.entries()) {
    const spec = readPluginEntry(entry, projectRoot);
    if (spec.kind === "package") continue;
    try {
      statSync(spec.path);
    } catch {
      throw new SettingInvalid({ setting: `plugins[${index}]`, reason: `no such folder or file: ${spec.path}` });
    }
  }
}

/** A short description of a value a caller passed: its type, and the value when it is small. @internal */
export function describe(value: unknown): string {
  if (value === undefined || value === null) return String(value);
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object") return "an object";
  if (typeof value === "function") return "a function";
  return `${typeof value} ${JSON.stringify(value)}`;
}

/**
 * Reports the diagnostics of a host or an engine as `onDiagnostic` says: by default each new
 * one printed to stderr once, those of the start first; `false`: none.
 * @internal
 */
export function reportDiagnostics(
  diagnostics: Diagnostics,
  onDiagnostic: ((diagnostic: Diagnostic) => void) | false | undefined,
  cwd: string,
  scope: Scope,
): void {
  if (onDiagnostic === false) return;
  const report = onDiagnostic ?? ((diagnostic) => process.stderr.write(`${formatDiagnostic(diagnostic, cwd)}\n`));
  for (const diagnostic of diagnostics.history) {
    try {
      report(diagnostic);
    } catch {
      // As for later ones (the channel's rule): a failing listener does not stop the host.
    }
  }
  void scope.add(diagnostics.subscribe(report));
}

/**
 * The options of a host (or an engine) that decide its context sources, those that are set:
 * what `startContextSources` takes besides the working folder. @internal
 */
export function contextSourceOptions(
  options: Omit<HostOptions, "providers">,
): Omit<Parameters<typeof startContextSources>[0], "cwd"> {
  return {
    ...pick(options, [
      "core",
      "builtins",
      "plugins",
      "projectRoot",
      "watch",
      "pluginSettings",
      "clock",
      "logger",
      "debounceMs",
      "deadlineMs",
      "setupDeadlineMs",
      "disposeDeadlineMs",
      "timeZone",
      "instructions",
      "isolation",
      "dedicatedWorkers",
      "pluginsPerWorker",
      "mcpServers",
    ]),
    ...(options.limits?.sourceValueBytes === undefined ? {} : { maxValueBytes: options.limits.sourceValueBytes }),
  };
}

/** The options that are set, of the given names (`exactOptionalPropertyTypes` keeps unset ones out). */
export function pick<T extends object, K extends keyof T>(options: T, names: readonly K[]): Partial<Pick<T, K>> {
  const picked: Partial<Pick<T, K>> = {};
  for (const name of names) if (options[name] !== undefined) picked[name] = options[name];
  return picked;
}
