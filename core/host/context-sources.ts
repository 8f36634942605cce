// Owns the composition root of the context sources: the registry, the awilix
// container plugins resolve services from, the built-in core sources, the plugin set
// and the one diagnostics channel. `createHost`, the CLI, the test harnesses and the
// benches all start their sources here, so they cannot wire them differently.

import path from "node:path";
import { asValue, createContainer } from "awilix";
import { type Clock, consoleLogger, type Logger, systemClock } from "../base/clock.ts";
import { Diagnostics } from "../base/diagnostics.ts";
import type { Scope } from "../base/scope.ts";
import { type McpSources, startMcpSources } from "../mcp/mcp-sources.ts";
import type { McpServersSettings } from "../mcp/settings.ts";
import type { PluginEvent } from "../plugins/events.ts";
import { type Isolation, PluginSet } from "../plugins/plugin-set.ts";
import { Registry, type SourceEnv } from "../registry/registry.ts";
import type { CoreSource } from "../sources/core-source.ts";
import { dateSource } from "../sources/date.ts";
import { environmentSource } from "../sources/environment.ts";
import { type DiscoveryLog, InstructionService, type InstructionSettings } from "../sources/instructions/service.ts";
import { namespaceOf, type SystemContext } from "../system-context/index.ts";

/**
 * The namespaces the built-in core sources' keys are in (`core/date`, `core/environment`,
 * `instructions/files`): the host's own, so no plugin may take them. The host reserves
 * them, and `check` reserves the same; a test holds them equal to the built-ins' keys.
 */
export const builtinNamespaces: readonly string[] = Object.freeze(["core", "instructions"]);

/** What decides which context sources a host composes. */
export interface ContextSourcesOptions {
  /** The working folder: the default plugin folder is `<cwd>/plugins`; plugins see it as `services.location`. */
  readonly cwd: string;
  /** The host project: relative plugin entries and plugin package names resolve from here (default `cwd`). */
  readonly projectRoot?: string;
  /** Core Context Sources, in order, after the built-ins. */
  readonly core?: readonly CoreSource[];
  /** Register the built-in core sources (`core/date`, `core/environment`, instructions). Default true. */
  readonly builtins?: boolean;
  /** Plugin folders, plugin files and installed plugin package names (resolved from `cwd`); they replace the default `plugins/` folder of the working folder. */
  readonly plugins?: readonly string[];
  /** Hot reload plugins on file changes (default true). */
  readonly watch?: boolean;
  /** Plugin settings by plugin name, checked against each plugin's `config` schema. */
  readonly pluginSettings?: Readonly<Record<string, unknown>>;
  readonly clock?: Clock;
  readonly logger?: Logger;
  /** Plugin reload debounce (default 50 ms). */
  readonly debounceMs?: number;
  /** Default plugin loader deadline (default 2 s). */
  readonly deadlineMs?: number;
  /** IANA time zone of `core/date`; host-local when unset. */
  readonly timeZone?: string;
  /** The instruction service: global file, project discovery switch, size limit. */
  readonly instructions?: InstructionSettings;
  /** Where nested instruction files discovered by tools are kept (the session store); none: not kept. */
  readonly discoveryLog?: DiscoveryLog;
  /** How long a plugin's module code and `setup` may run (default 10 s). */
  readonly setupDeadlineMs?: number;
  /** How long a plugin generation's disposers may run (default 5 s). */
  readonly disposeDeadlineMs?: number;
  /** Where plugin code runs: its own worker per plugin (default) or the host's process. */
  readonly isolation?: Isolation;
  /** Largest accepted value of an isolated plugin source, UTF-8 bytes of its JSON (the session's `sourceValueBytes`). */
  readonly maxValueBytes?: number;
  /** Plugins that get a worker thread of their own (default 32); those beyond share workers, each in its own realm. */
  readonly dedicatedWorkers?: number;
  /** Plugins per shared worker, beyond `dedicatedWorkers` (default 8). */
  readonly pluginsPerWorker?: number;
  /** MCP servers whose resources and instructions are Context Sources (`mcp/<server>/<name>`). */
  readonly mcpServers?: McpServersSettings;
}

/** The started context sources of one host. */
export interface ContextSources {
  readonly registry: Registry;
  readonly plugins: PluginSet;
  readonly instructions: InstructionService;
  /** The MCP servers' sources; none when no server is configured. */
  readonly mcp: McpSources | undefined;
  /** The one diagnostics channel: plugins, instruction files, the watcher (`origin` says which). */
  readonly diagnostics: Diagnostics;
  /** Composes every registered source for a boundary's env (MCP servers first do their due reads). */
  compose(env: SourceEnv): Promise<SystemContext>;
  /** Plugin events and every new diagnostic (instruction problems included). Returns an unsubscribe. */
  subscribe(listener: (event: PluginEvent) => void): () => void;
}

/**
 * Starts the context sources; everything started is added to `scope`, so closing the
 * scope releases it (also when starting fails half-way).
 */
export async function startContextSources(options: ContextSourcesOptions, scope: Scope): Promise<ContextSources> {
  const clock = options.clock ?? systemClock;
  const container = createContainer();
  container.register({
    clock: asValue(clock),
    logger: asValue(options.logger ?? consoleLogger),
    location: asValue(options.cwd),
  });
  void scope.add(() => container.dispose());

  const diagnostics = new Diagnostics();
  const instructions = new InstructionService({
    ...(options.discoveryLog === undefined ? {} : { store: options.discoveryLog }),
    ...(options.instructions === undefined ? {} : { settings: options.instructions }),
    report: (problem) =>
      diagnostics.report({
        origin: "instructions",
        plugin: "core",
        file: problem.file,
        phase: "instructions",
        message: problem.message,
      }),
    resolve: (file) => diagnostics.resolve((d) => d.origin === "instructions" && d.file === file),
  });

  const registry = new Registry();
  const builtins: CoreSource[] =
    options.builtins === false
      ? []
      : [
          dateSource({ clock, ...(options.timeZone === undefined ? {} : { timeZone: options.timeZone }) }),
          environmentSource(),
          instructions.registration(),
        ];
  const core = [...builtins, ...(options.core ?? [])];
  for (const source of core) {
    registry.register(scope, { key: source.key, origin: "core", load: (env) => source.load(env) });
  }

  const plugins = await PluginSet.start({
    folders: options.plugins ?? [path.join(options.cwd, "plugins")],
    projectRoot: options.projectRoot ?? options.cwd,
    registry,
    container,
    diagnostics,
    settings: options.pluginSettings ?? {},
    // Core sources' namespaces belong to the host.
    reservedNamespaces: [
      ...new Set([
        ...(builtins.length === 0 ? [] : builtinNamespaces),
        ...core.map((source) => namespaceOf(source.key)),
        ...(Object.keys(options.mcpServers ?? {}).length === 0 ? [] : ["mcp"]),
      ]),
    ],
    watch: options.watch ?? true,
    ...(options.debounceMs === undefined ? {} : { debounceMs: options.debounceMs }),
    ...(options.deadlineMs === undefined ? {} : { deadlineMs: options.deadlineMs }),
    ...(options.isolation === undefined ? {} : { isolation: options.isolation }),
    ...(options.setupDeadlineMs === undefined ? {} : { setupDeadlineMs: options.setupDeadlineMs }),
    ...(options.disposeDeadlineMs === undefined ? {} : { disposeDeadlineMs: options.disposeDeadlineMs }),
    ...(options.maxValueBytes === undefined ? {} : { maxValueBytes: options.maxValueBytes }),
    ...(options.dedicatedWorkers === undefined ? {} : { dedicatedWorkers: options.dedicatedWorkers }),
    ...(options.pluginsPerWorker === undefined ? {} : { pluginsPerWorker: options.pluginsPerWorker }),
  });
  void scope.add(() => plugins.close());

  const mcp = await startMcpSources(
    {
      servers: options.mcpServers ?? {},
      registry,
      diagnostics,
      cwd: options.cwd,
      ...(options.maxValueBytes === undefined ? {} : { maxValueBytes: options.maxValueBytes }),
    },
    scope,
  );

  return {
    registry,
    plugins,
    instructions,
    mcp,
    diagnostics,
    compose:
      mcp === undefined
        ? (env) => registry.compose(env)
        : (env) => {
            const preparing = mcp.prepare();
            return preparing === undefined ? registry.compose(env) : preparing.then(() => registry.compose(env));
          },
    subscribe(listener) {
      const fromPlugins = plugins.subscribe((event) => {
        // Plugin diagnostics reach listeners through the channel below.
        if (event.kind !== "diagnostic") listener(event);
      });
      const fromChannel = diagnostics.subscribe((diagnostic) => listener({ kind: "diagnostic", diagnostic }));
      return () => {
        fromPlugins();
        fromChannel();
      };
    },
  };
}
