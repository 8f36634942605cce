// Owns one plugin generation's activation: check the definition and its config,
// run `setup` in a fresh Scope with its own awilix scope, and collect the Context
// Sources it declares. Nothing here touches the registry: the host swaps a
// generation in only when activation succeeded.

import { type AwilixContainer, asValue } from "awilix";
import type { TSchema } from "typebox";
import { Compile } from "typebox/compile";
import { Default } from "typebox/value";
import { withinDeadline } from "../base/deadline.ts";
import type { DiagnosticPhase } from "../base/diagnostics.ts";
import { Scope } from "../base/scope.ts";
import { isKey } from "../system-context/index.ts";
import { isPlugin, type Plugin, type PluginApi, type PluginSource } from "./define.ts";
import type { PluginServices } from "./services.ts";

/** A plugin name is a namespace: lower case, the first segment of a key. */
export const pluginNamePattern = /^[a-z0-9][a-z0-9._-]*$/;

/** An activated generation, ready to be swapped in. */
export interface ActivatedGeneration {
  readonly name: string;
  readonly generation: number;
  readonly scope: Scope;
  readonly sources: readonly PluginSource[];
}

/** Why a generation could not be activated. `key` names the source when one is at fault. */
export class ActivationError extends Error {
  override readonly name = "ActivationError";
  constructor(
    readonly phase: DiagnosticPhase,
    message: string,
    readonly plugin: string | undefined,
    readonly key?: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export interface ActivationInput {
  readonly exports: Record<string, unknown>;
  readonly generation: number;
  /** The host's root awilix container: clock, logger, location. */
  readonly container: AwilixContainer;
  /** The host's settings for plugins, by plugin name. */
  readonly settings: Readonly<Record<string, unknown>>;
  /** How long `setup` may run. */
  readonly setupDeadlineMs: number;
  /** Namespaces of the host's core sources; no plugin may take them. */
  readonly reservedNamespaces?: ReadonlySet<string>;
}

/** The definition a plugin module default-exports, or an `ActivationError` saying what is wrong. */
export function pluginOf(exports: Record<string, unknown>, reserved: ReadonlySet<string> = new Set(["core"])): Plugin {
  const candidate = exports.default;
  if (!isPlugin(candidate)) {
    throw new ActivationError(
      "evaluate",
      "the module does not default-export a plugin: write `export default definePlugin({ name, setup })`",
      undefined,
    );
  }
  if (typeof candidate.name !== "string" || !pluginNamePattern.test(candidate.name)) {
    throw new ActivationError(
      "setup",
      `invalid plugin name ${JSON.stringify(candidate.name)}: expected ${pluginNamePattern}`,
      undefined,
    );
  }
  if (reserved.has(candidate.name)) {
    throw new ActivationError(
      "namespace",
      `the namespace "${candidate.name}" is reserved for the host's core sources`,
      candidate.name,
    );
  }
  if (typeof candidate.setup !== "function") throw new ActivationError("setup", "setup is not a function", candidate.name);
  return candidate;
}

function checkConfig(plugin: Plugin, raw: unknown): unknown {
  const schema = plugin.config as TSchema | undefined;
  if (schema === undefined) return raw;
  // Defaults are a convenience for settings; nothing else is converted.
  const given = structuredClone(raw);
  let value = Default(schema, given);
  // No settings at all: an object schema whose fields all have defaults still works.
  if (value === undefined) value = Default(schema, {});
  const validator = Compile(schema);
  if (!validator.Check(value)) {
    const first = validator.Errors(value)[0];
    throw new ActivationError(
      "config",
      `config rejected at ${first?.instancePath || "/"}: ${first?.message ?? "does not match the plugin's config schema"}`,
      plugin.name,
    );
  }
  return value;
}

/**
 * Runs `setup` of a plugin in a fresh scope. On failure the scope is closed (so a
 * half-built generation releases what it took) and an `ActivationError` thrown.
 */
export async function activateGeneration(input: ActivationInput): Promise<ActivatedGeneration> {
  const plugin = pluginOf(input.exports, input.reservedNamespaces);
  const config = checkConfig(plugin, input.settings[plugin.name]);
  const scope = new Scope(`plugin ${plugin.name} generation ${input.generation}`);
  const services = input.container.createScope();
  services.register({ config: asValue(config), pluginName: asValue(plugin.name) });
  void scope.add(() => services.dispose());

  const sources: PluginSource[] = [];
  let isSetUp = false;
  const api: PluginApi<unknown> = {
    name: plugin.name,
    source<S extends TSchema>(source: PluginSource<S>) {
      if (isSetUp) throw new Error(`${plugin.name}: api.source() after setup finished; register sources inside setup`);
      const key = source?.key;
      if (!isKey(key)) throw new ActivationError("setup", `invalid source key ${JSON.stringify(key)}`, plugin.name, String(key));
      if (!key.startsWith(`${plugin.name}/`)) {
        throw new ActivationError(
          "setup",
          `source key "${key}" is outside the plugin's namespace "${plugin.name}/"`,
          plugin.name,
          key,
        );
      }
      if (sources.some((s) => s.key === key)) {
        throw new ActivationError("setup", `source key "${key}" is declared twice`, plugin.name, key);
      }
      for (const renderer of ["load", "baseline", "update"] as const) {
        if (typeof source[renderer] !== "function") {
          throw new ActivationError("setup", `source "${key}" has no ${renderer} function`, plugin.name, key);
        }
      }
      sources.push(source as unknown as PluginSource);
    },
    onDispose(disposer) {
      void scope.add(disposer);
    },
    services: services.cradle as PluginServices<unknown>,
  };

  try {
    await withinDeadline(() => plugin.setup(api as PluginApi<never>, config as never), input.setupDeadlineMs, "setup");
  } catch (error) {
    await scope.close().catch(() => {});
    if (error instanceof ActivationError) throw error;
    throw new ActivationError(
      "setup",
      `setup threw: ${error instanceof Error ? error.message : String(error)}`,
      plugin.name,
      undefined,
      {
        cause: error,
      },
    );
  } finally {
    isSetUp = true;
  }
  return { name: plugin.name, generation: input.generation, scope, sources };
}
