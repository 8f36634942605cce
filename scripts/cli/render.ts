// Owns `context-host render`: load the plugins, initialize, print the Baseline.

import path from "node:path";
import { asValue, createContainer } from "awilix";
import type { CoreSource } from "../../core/host.ts";
import { formatDiagnostic } from "../../core/plugins/diagnostic.ts";
import { PluginHost } from "../../core/plugins/host.ts";
import { silentLogger, systemClock } from "../../core/plugins/services.ts";
import { Registry } from "../../core/registry/registry.ts";
import { Scope } from "../../core/registry/scope.ts";
import { InitializationBlocked, initialize, namespaceOf } from "../../core/system-context/index.ts";

/** Exit codes of `render`. */
export const exitCodes = { ok: 0, pluginFailed: 2, blocked: 3 } as const;

export interface RenderOptions {
  readonly plugins: readonly string[];
  readonly json: boolean;
  readonly location: string;
  readonly core: readonly CoreSource[];
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
}

/** Renders the Baseline System Context: core sources first, then plugin sources in key order. */
export async function render(options: RenderOptions): Promise<number> {
  const scope = new Scope("render");
  const registry = new Registry();
  for (const core of options.core) registry.register(scope, { key: core.key, origin: "core", load: (env) => core.load(env) });
  const container = createContainer();
  container.register({ clock: asValue(systemClock), logger: asValue(silentLogger), location: asValue(options.location) });
  // Core namespaces belong to the host.
  const reservedNamespaces = options.core.map((core) => namespaceOf(core.key));
  const host = await PluginHost.start({ folders: options.plugins, registry, container, watch: false, reservedNamespaces });
  try {
    let generation: Awaited<ReturnType<typeof initialize>>;
    try {
      generation = await initialize(await registry.compose({ location: options.location }));
    } catch (error) {
      if (!(error instanceof InitializationBlocked)) throw error;
      options.err(`initialization blocked by unavailable core sources: ${error.keys.join(", ")}`);
      return exitCodes.blocked;
    }
    const diagnostics = host.diagnostics;
    if (options.json) {
      options.out(
        JSON.stringify(
          { baseline: generation.baseline, snapshot: generation.snapshot, plugins: host.plugins(), diagnostics },
          null,
          2,
        ),
      );
    } else {
      options.out(generation.baseline);
    }
    for (const diagnostic of diagnostics) options.err(formatDiagnostic(diagnostic, options.location));
    return host.failures().length > 0 ? exitCodes.pluginFailed : exitCodes.ok;
  } finally {
    await host.close();
    await scope.close();
  }
}

/** Parses `render` arguments: `[--plugins DIR]... [--json] [--location DIR]`. */
export function parseRenderArgs(args: readonly string[], cwd: string): { plugins: string[]; json: boolean; location: string } {
  const plugins: string[] = [];
  let json = false;
  let location = cwd;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    if (arg === "--json") json = true;
    else if (arg === "--plugins" || arg === "--location") {
      const value = args[++i];
      if (value === undefined) throw new UsageError(`${arg} needs a folder`);
      if (arg === "--plugins") plugins.push(path.resolve(cwd, value));
      else location = path.resolve(cwd, value);
    } else throw new UsageError(`unknown argument ${JSON.stringify(arg)}`);
  }
  return { plugins: plugins.length > 0 ? plugins : [path.join(cwd, "plugins")], json, location };
}

/** Bad command-line use. */
export class UsageError extends Error {
  override readonly name = "UsageError";
}
