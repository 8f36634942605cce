// Owns `renderBaseline`: the Baseline a host with given options would start a session at a
// location with, without a store and without a provider: the context sources start as a
// host starts them (the one composition root, context-sources.ts), compose once for the
// location, initialize, and close. `context-host render` prints what it returns.

import path from "node:path";
import type { Diagnostic } from "../base/diagnostics.ts";
import { Scope } from "../base/scope.ts";
import type { PluginInfo } from "../plugins/events.ts";
import { initialize, type Snapshot } from "../system-context/index.ts";
import { startContextSources } from "./context-sources.ts";
import { checkPluginFolders, type HostOptions } from "./host-options.ts";
import { checkSettings } from "./settings.ts";

/** Options of `renderBaseline`: the `HostOptions` that decide the context sources, and the location. */
export interface RenderBaselineOptions
  extends Pick<
    HostOptions,
    | "core"
    | "builtins"
    | "plugins"
    | "projectRoot"
    | "pluginSettings"
    | "clock"
    | "logger"
    | "deadlineMs"
    | "setupDeadlineMs"
    | "disposeDeadlineMs"
    | "timeZone"
    | "instructions"
    | "isolation"
    | "mcpServers"
    | "limits"
  > {
  /**
   * The session location the Baseline is composed for, and the host's working folder (the
   * default plugin folder is `<location>/plugins`, the default project root `location`).
   * Default: the process's working folder.
   */
  readonly location?: string;
}

/** What `renderBaseline` rendered. */
export interface RenderedBaseline {
  /** The Baseline System Context, as a session's first boundary would send it (without the host's system prompt). */
  readonly baseline: string;
  /** The Context Snapshot the Baseline was rendered from. */
  readonly snapshot: Snapshot;
  /** The plugins that loaded. */
  readonly plugins: PluginInfo[];
  /** The plugin files and packages that failed to load (the rest still render; their diagnostics are in `diagnostics`). */
  readonly failedPlugins: string[];
  /** Every distinct diagnostic of the start and the render: plugins, instruction files, MCP servers. */
  readonly diagnostics: Diagnostic[];
}

/**
 * The Baseline a host with these options would start a session at `options.location`
 * with: plugins, core sources and MCP servers start, are composed once and initialized,
 * then stop; no store is opened and no provider called. Settings are checked as
 * `createHost` checks them (`SettingInvalid`); a core source that blocks initialization
 * rejects with `InitializationBlocked` (`context-host/system-context`) naming its keys.
 *
 * @example
 * ```ts
 * import { renderBaseline } from "context-host";
 *
 * const { baseline, diagnostics } = await renderBaseline({ plugins: [], timeZone: "UTC" });
 * console.log(baseline.startsWith("Today's date is"), diagnostics.length);
 * ```
 */
export async function renderBaseline(options: RenderBaselineOptions = {}): Promise<RenderedBaseline> {
  checkSettings(options);
  const location = path.resolve(options.location ?? process.cwd());
  const projectRoot = path.resolve(options.projectRoot ?? location);
  if (options.plugins !== undefined) checkPluginFolders(options.plugins, projectRoot);
  const scope = new Scope("renderBaseline");
  try {
    const { limits, location: _location, ...rest } = options;
    const sources = await startContextSources(
      {
        ...rest,
        cwd: location,
        projectRoot,
        watch: false,
        ...(limits?.sourceValueBytes === undefined ? {} : { maxValueBytes: limits.sourceValueBytes }),
      },
      scope,
    );
    const { baseline, snapshot } = await initialize(await sources.compose({ location }));
    return {
      baseline,
      snapshot,
      plugins: sources.plugins.plugins(),
      failedPlugins: sources.plugins.failures().map((failure) => failure.file),
      diagnostics: [...sources.diagnostics.history],
    };
  } finally {
    await scope.close();
  }
}
