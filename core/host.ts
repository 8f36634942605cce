// Owns the composition root: `createHost` wires the registry, the plugin host, the
// durable store and the session runtime with awilix, and exposes the Host API.

import path from "node:path";
import { asValue, createContainer } from "awilix";
import { dateSource } from "./builtins/date.ts";
import { environmentSource } from "./builtins/environment.ts";
import { readTool } from "./instructions/read-tool.ts";
import { InstructionService, type InstructionSettings } from "./instructions/service.ts";
import type { Diagnostic } from "./plugins/diagnostic.ts";
import { type PluginEvent, PluginHost, type PluginInfo } from "./plugins/host.ts";
import { type Clock, consoleLogger, type Logger, systemClock } from "./plugins/services.ts";
import type { Provider } from "./providers/provider.ts";
import { Registry, type SourceEnv } from "./registry/registry.ts";
import { Scope } from "./registry/scope.ts";
import { SessionRuntime, type StepResult, type Tool } from "./session/runtime.ts";
import { SqliteSessionStore, sessionsFile } from "./session/store/sqlite.ts";
import type { SessionStore, StoredMessage } from "./session/store/store.ts";
import { checkSettings } from "./settings.ts";
import { namespaceOf, type SystemContext } from "./system-context/index.ts";

/** A core Context Source registration: trusted, composed before every plugin source, in this order. */
export interface CoreSource {
  readonly key: string;
  load(env: SourceEnv): SystemContext | Promise<SystemContext>;
}

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
  /** Plugin folders; they replace the default `plugins/` folder of the working folder. */
  readonly plugins?: readonly string[];
  /** Hot reload plugins on file changes (default true). */
  readonly watch?: boolean;
  /** Host tools the model may call. */
  readonly tools?: Readonly<Record<string, Tool>>;
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
  /** IANA time zone of `core/date`; host-local when unset. */
  readonly timeZone?: string;
  /** The instruction service: global file, project discovery switch, size limit. */
  readonly instructions?: InstructionSettings;
  /** Register the built-in core sources (`core/date`, `core/environment`, instructions). Default true. */
  readonly builtins?: boolean;
}

/** The Host API (SPEC section 5). */
export interface Host {
  createSession(session: { location: string; provider: string; model: string }): Promise<string>;
  prompt(id: string, text: string): Promise<void>;
  step(id: string): Promise<StepResult>;
  messages(id: string): Promise<StoredMessage[]>;
  compact(id: string): Promise<void>;
  switchModel(id: string, change: { provider?: string; model: string }): Promise<void>;
  move(id: string, location: string): Promise<void>;
  /** Active plugins. */
  plugins(): PluginInfo[];
  /** Diagnostics so far: instruction files (`plugin: "core"`), then plugins. */
  readonly diagnostics: readonly Diagnostic[];
  /** Plugin events (diagnostics, generations). Returns an unsubscribe. */
  onPluginEvent(listener: (event: PluginEvent) => void): () => void;
  close(): Promise<void>;
}

/** Creates a host: loads plugins, opens the store, and serves sessions. */
export async function createHost(options: HostOptions): Promise<Host> {
  checkSettings(options);
  const scope = new Scope("host");
  try {
    return await assembleHost(options, scope);
  } catch (error) {
    // Nothing half-built stays open: the store, watchers and plugin scopes are released.
    await scope.close().catch(() => {});
    throw error;
  }
}

async function assembleHost(options: HostOptions, scope: Scope): Promise<Host> {
  const cwd = process.cwd();
  const container = createContainer();
  container.register({
    clock: asValue(options.clock ?? systemClock),
    logger: asValue(options.logger ?? consoleLogger),
    location: asValue(cwd),
  });
  void scope.add(() => container.dispose());

  const store =
    options.store ?? new SqliteSessionStore(sessionsFile(path.resolve(options.dataDir ?? path.join(cwd, ".context-host"))));
  void scope.add(() => store.close());

  const coreDiagnostics: Diagnostic[] = [];
  const instructions = new InstructionService({
    store,
    ...(options.instructions === undefined ? {} : { settings: options.instructions }),
    report: (problem) =>
      coreDiagnostics.push({ plugin: "core", file: problem.file, phase: "instructions", message: problem.message }),
  });

  const registry = new Registry();
  const builtins: CoreSource[] =
    options.builtins === false
      ? []
      : [
          dateSource({
            clock: options.clock ?? systemClock,
            ...(options.timeZone === undefined ? {} : { timeZone: options.timeZone }),
          }),
          environmentSource(),
          instructions.registration(),
        ];
  const coreNamespaces = [...builtins, ...(options.core ?? [])].map((core) => namespaceOf(core.key));
  for (const core of [...builtins, ...(options.core ?? [])]) {
    registry.register(scope, { key: core.key, origin: "core", load: (env) => core.load(env) });
  }

  const plugins = await PluginHost.start({
    folders: options.plugins ?? [path.join(cwd, "plugins")],
    registry,
    container,
    settings: options.pluginSettings ?? {},
    // Core sources' namespaces belong to the host.
    reservedNamespaces: [...new Set(coreNamespaces)],
    watch: options.watch ?? true,
    ...(options.debounceMs === undefined ? {} : { debounceMs: options.debounceMs }),
    ...(options.deadlineMs === undefined ? {} : { deadlineMs: options.deadlineMs }),
  });
  void scope.add(() => plugins.close());

  const runtime = new SessionRuntime({
    store,
    compose: (env) => registry.compose(env),
    providers: options.providers,
    ...(options.systemPrompt === undefined ? {} : { systemPrompt: options.systemPrompt }),
    tools: { read: readTool, ...options.tools },
    projectFiles: (sessionId, location) => instructions.projectFiles(sessionId, location),
  });

  return {
    createSession: (session) => runtime.createSession(session),
    prompt: (id, text) => runtime.prompt(id, text),
    step: (id) => runtime.step(id),
    messages: (id) => runtime.messages(id),
    compact: (id) => runtime.compact(id),
    switchModel: (id, change) => runtime.switchModel(id, change),
    move: (id, location) => runtime.move(id, location),
    plugins: () => plugins.plugins(),
    get diagnostics() {
      return [...coreDiagnostics, ...plugins.diagnostics];
    },
    onPluginEvent: (listener) => plugins.subscribe(listener),
    close: () => scope.close(),
  };
}
