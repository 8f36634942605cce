// Owns one plugin generation's activation: check the definition and its config, run `setup`
// in a fresh Scope with its own awilix scope, and collect the Context Sources it declares.

import { type AwilixContainer, asValue } from "awilix";
import type { TSchema } from "typebox";
import { Check, Default, Errors } from "typebox/value";
import { withinDeadline } from "../base/deadline.ts";
import type { DiagnosticPhase } from "../base/diagnostics.ts";
import { ContextHostError, messageOf } from "../base/errors.ts";
import { Scope } from "../base/scope.ts";
import { isKey } from "../system-context/key.ts";
import { isPlugin, type Plugin, type PluginApi, type PluginServices, type PluginSource } from "./define.ts";

/** A plugin name is a namespace: lower case, the first segment of a key. */
export const pluginNamePattern = /^[a-z0-9][a-z0-9._-]*$/;

/**
 * What an `ActivationFailed` says: the phase and the reason, and the plugin, the source and the
 * cause when known.
 */
interface ActivationFailure {
  readonly phase: DiagnosticPhase;
  readonly reason: string;
  readonly plugin?: string | undefined;
  readonly key?: string | undefined;
  readonly cause?: unknown;
}

/** Why a generation could not be activated. `key` names the source when one is at fault. */
export class ActivationFailed extends ContextHostError {
  readonly phase: DiagnosticPhase;
  readonly plugin: string | undefined;
  readonly key: string | undefined;
  constructor(options: ActivationFailure) {
    super(options.reason, options.cause === undefined ? undefined : { cause: options.cause });
    this.phase = options.phase;
    this.plugin = options.plugin;
    this.key = options.key;
  }
}

/** `api.source()` was called after `setup` finished: sources belong to a generation's setup. */
export class SourceDeclaredAfterSetup extends ContextHostError {
  readonly plugin: string;
  readonly key: string;
  constructor(options: { readonly plugin: string; readonly key: string }) {
    const call = `api.source(${JSON.stringify(options.key)})`;
    super(`${options.plugin}: ${call} after setup finished; register sources inside setup`);
    this.plugin = options.plugin;
    this.key = options.key;
  }
}

export interface ActivationInput {
  /**
   * The definition as `pluginOf` checked it, and its settings as given (before its `config`
   * schema's check).
   */
  readonly plugin: Plugin;
  readonly config: unknown;
  readonly generation: number;
  /** The services a plugin resolves: clock, logger, location. */
  readonly container: AwilixContainer;
  readonly setupDeadlineMs: number;
}

/**
 * The plugin a module default-exports, or an `ActivationFailed` saying what is wrong; `reserved`:
 * namespaces no plugin may take.
 */
export function pluginOf(exports: Record<string, unknown>, reserved = coreNamespace): Plugin {
  const candidate = exports.default;
  const hint = "write `export default definePlugin({ name, setup })`";
  if (!isPlugin(candidate)) throw refused("evaluate", `the module does not default-export a plugin: ${hint}`);
  const { name } = candidate;
  if (typeof name !== "string" || !pluginNamePattern.test(name)) {
    throw refused("setup", `invalid plugin name ${JSON.stringify(name)}: expected ${pluginNamePattern}`);
  }
  if (reserved.has(name)) {
    throw refused("namespace", `the namespace "${name}" is reserved for the host's core sources`, name);
  }
  if (typeof candidate.setup !== "function") throw refused("setup", "setup is not a function", name);
  return candidate;
}

/** The namespaces no plugin may take unless the host reserves more: its core sources'. */
const coreNamespace: ReadonlySet<string> = new Set(["core"]);

function refused(phase: DiagnosticPhase, reason: string, plugin?: string): ActivationFailed {
  return new ActivationFailed({ phase, reason, plugin });
}

function checkConfig(plugin: Plugin, raw: unknown): unknown {
  const schema = plugin.config as TSchema | undefined;
  if (schema === undefined) return raw;
  // Defaults fill in what is not given (no settings at all: an object of defaults); nothing is converted.
  let value = Default(schema, structuredClone(raw));
  if (value === undefined) value = Default(schema, {});
  // Checked once: interpreted, not compiled (compiling costs a worker's start-up more).
  if (Check(schema, value)) return value;
  const first = Errors(schema, value)[0];
  const at = first?.instancePath || "/";
  const why = first?.message ?? "does not match the plugin's config schema";
  const reason = `config rejected at ${at}: ${why}`;
  throw new ActivationFailed({ phase: "config", reason, plugin: plugin.name });
}

/**
 * An activated generation, ready to be swapped in: its plugin's name, its scope and the sources its
 * `setup` declared.
 */
export type ActivatedGeneration = Awaited<ReturnType<typeof activateGeneration>>;

/**
 * Runs `setup` of a plugin in a fresh scope; on failure the scope is closed (a half-built
 * generation releases what it took).
 */
export async function activateGeneration(input: ActivationInput) {
  const { plugin } = input;
  const config = checkConfig(plugin, input.config);
  const scope = new Scope(`plugin ${plugin.name} generation ${input.generation}`);
  const services = input.container.createScope();
  services.register({ config: asValue(config), pluginName: asValue(plugin.name) });
  void scope.add(() => services.dispose());

  const sources: PluginSource[] = [];
  /**
   * Where each source was declared (the stack of its `api.source` call, formatted only when
   * asked): the place of a fault the plugin's own code did not throw (a value its schema
   * refuses, an empty rendering).
   */
  const declaredAt = new Map<string, Error>();
  let isSetUp = false;
  const api: PluginApi<unknown> = {
    name: plugin.name,
    source<S extends TSchema>(source: PluginSource<S>) {
      const key = source?.key;
      if (isSetUp) throw new SourceDeclaredAfterSetup({ plugin: plugin.name, key: String(key) });
      checkSource(plugin.name, source, sources);
      sources.push(source as unknown as PluginSource);
      declaredAt.set(key, new Error(`source ${key} declared here`));
    },
    onDispose: (disposer) => void scope.add(disposer),
    services: services.cradle as PluginServices<unknown>,
  };

  try {
    const setUp = () => plugin.setup(api as PluginApi<never>, config as never);
    await withinDeadline(setUp, input.setupDeadlineMs, "setup");
  } catch (error) {
    await scope.close().catch(() => {});
    if (error instanceof ActivationFailed) throw error;
    const reason = `setup threw: ${messageOf(error)}`;
    throw new ActivationFailed({ phase: "setup", reason, plugin: plugin.name, cause: error });
  } finally {
    isSetUp = true;
  }
  return { name: plugin.name, scope, sources, declaredAt: declaredAt as ReadonlyMap<string, Error> };
}

/**
 * Refuses a source `setup` declares with an invalid key, a key outside its plugin's namespace
 * or already declared, or a renderer that is not a function.
 */
function checkSource<S extends TSchema>(plugin: string, source: PluginSource<S>, declared: PluginSource[]) {
  const key = source?.key;
  const where = { phase: "setup", plugin, key: String(key) } as const;
  const failed = (reason: string) => new ActivationFailed({ ...where, reason });
  if (!isKey(key)) throw failed(`invalid source key ${JSON.stringify(key)}`);
  if (!key.startsWith(`${plugin}/`)) {
    throw failed(`source key "${key}" is outside the plugin's namespace "${plugin}/"`);
  }
  if (declared.some((s) => s.key === key)) throw failed(`source key "${key}" is declared twice`);
  for (const renderer of ["load", "baseline", "update"] as const) {
    if (typeof source[renderer] !== "function") throw failed(`source "${key}" has no ${renderer} function`);
  }
}
