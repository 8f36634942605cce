// Owns `context-host render`: the Baseline a host with the command's settings would start
// (`renderBaseline`), printed.

import {
  type CoreSource,
  formatDiagnostic,
  type InstructionSettings,
  type McpServersSettings,
  type RenderedBaseline,
  renderBaseline,
} from "../../core/index.ts";
import { InitializationBlocked } from "../../core/system-context.ts";
import { parseCommandLine } from "./arguments.ts";
import { choosePlugins, noPluginsLine } from "./plugin-entries.ts";
import { loadSettings } from "./settings.ts";
import { UsageInvalid } from "./usage.ts";

/** Exit codes of `render`. */
export const exitCodes = { ok: 0, pluginFailed: 2, blocked: 3 } as const;

/** The settings `render` takes from its settings file, as a host takes them from `createHost`. */
export interface RenderSettings {
  readonly timeZone?: string;
  readonly instructions?: InstructionSettings;
  readonly pluginSettings?: Readonly<Record<string, unknown>>;
  readonly mcpServers?: McpServersSettings;
}

export interface RenderOptions {
  readonly plugins: readonly string[];
  /** Said once on stderr: no plugin was named and ./plugins does not exist. */
  readonly pluginsNote?: string;
  readonly json: boolean;
  readonly location: string;
  /** Where plugin package names resolve from (default: `location`); the command line's working folder. */
  readonly projectRoot?: string;
  readonly settings?: RenderSettings;
  /** Core sources after the built-ins. */
  readonly core?: readonly CoreSource[];
  /** The built-in core sources (default true). */
  readonly builtins?: boolean;
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
}

/** Renders the Baseline System Context: core sources first, then plugin sources in key order. */
export async function render(options: RenderOptions): Promise<number> {
  if (options.pluginsNote !== undefined) options.err(noPluginsLine(options.pluginsNote));
  let rendered: RenderedBaseline;
  try {
    rendered = await renderBaseline({
      location: options.location,
      // What goes wrong is in `diagnostics`, printed below: nothing is logged.
      logger: { info() {}, warn() {}, error() {} },
      // A one-shot command: a plugin's disposers get 1 s, then its worker is stopped.
      disposeDeadlineMs: 1000,
      ...(options.core === undefined ? {} : { core: options.core }),
      ...(options.builtins === undefined ? {} : { builtins: options.builtins }),
      ...options.settings,
      plugins: options.plugins,
      ...(options.projectRoot === undefined ? {} : { projectRoot: options.projectRoot }),
    });
  } catch (error) {
    if (!(error instanceof InitializationBlocked)) throw error;
    options.err(`initialization blocked by unavailable core sources: ${error.keys.join(", ")}`);
    return exitCodes.blocked;
  }
  if (options.json) {
    options.out(
      JSON.stringify(
        {
          baseline: rendered.baseline,
          snapshot: rendered.snapshot,
          // The load times vary from run to run: the JSON says what loaded, not how fast.
          plugins: rendered.plugins.map(({ loadMs: _loadMs, ...plugin }) => plugin),
          diagnostics: rendered.diagnostics,
        },
        null,
        2,
      ),
    );
  } else {
    options.out(rendered.baseline);
  }
  for (const diagnostic of rendered.diagnostics) options.err(formatDiagnostic(diagnostic, options.location));
  return rendered.failedPlugins.length > 0 ? exitCodes.pluginFailed : exitCodes.ok;
}

/** The options of `render`: `[--plugins DIR|FILE|PACKAGE]... [--json] [--location DIR] [--settings FILE]`. */
const renderLine = {
  command: "render",
  shared: ["plugins", "json", "location", "settings"],
  own: {},
} as const;

/** Parses `render` arguments (`--config` is `--settings`). */
export function parseRenderArgs(
  args: readonly string[],
  cwd: string,
): {
  plugins: readonly string[];
  pluginsNote?: string;
  json: boolean;
  location: string;
  projectRoot: string;
  settings: RenderSettings;
} {
  const { options } = parseCommandLine(args, cwd, renderLine);
  const { plugins: fromSettings, ...settings } = loadSettings(options.settings, cwd, "render");
  const chosen = choosePlugins(options.plugins, fromSettings, cwd);
  return {
    plugins: chosen.entries,
    ...(chosen.absentNote === undefined ? {} : { pluginsNote: chosen.absentNote }),
    json: options.json,
    location: options.location ?? cwd,
    projectRoot: cwd,
    settings,
  };
}

export { UsageInvalid };
