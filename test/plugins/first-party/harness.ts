// Test harness for first-party plugins: loads the real `plugins/` folder through the
// host's `startContextSources` (no built-in sources, no watching) and composes only the
// sources of the plugin under test.

import { execFileSync } from "node:child_process";
import { mkdtempSync, realpathSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Logger } from "../../../core/base/clock.ts";
import type { Diagnostic } from "../../../core/base/diagnostics.ts";
import { Scope } from "../../../core/base/scope.ts";
import { startContextSources } from "../../../core/host/context-sources.ts";
import type { PluginSet } from "../../../core/plugins/plugin-set.ts";
import type { Registry } from "../../../core/registry/registry.ts";
import * as SystemContext from "../../../core/system-context.ts";

export const pluginsFolder = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../plugins");

export interface LoadedPlugin {
  readonly host: PluginSet;
  readonly registry: Registry;
  /** What the plugins logged, as `level: message`. */
  readonly logged: string[];
  /** The composed System Context of the sources whose key starts with `namespace/`, for `location`. */
  compose(location: string): Promise<SystemContext.SystemContext>;
  close(): Promise<void>;
}

/** Starts a host over the real plugins folder and keeps only `namespace`'s sources in compositions. */
export async function loadPlugin(namespace: string, settings: Record<string, unknown> = {}): Promise<LoadedPlugin> {
  const logged: string[] = [];
  const logger: Logger = {
    info: (message) => logged.push(`info: ${message}`),
    warn: (message) => logged.push(`warn: ${message}`),
    error: (message) => logged.push(`error: ${message}`),
  };
  const scope = new Scope(`first-party ${namespace}`);
  const { registry, plugins: host } = await startContextSources(
    { cwd: process.cwd(), plugins: [pluginsFolder], builtins: false, watch: false, logger, pluginSettings: settings },
    scope,
  );
  const failures = host.failures();
  if (failures.length > 0) {
    await scope.close();
    throw new Error(`plugins failed to load: ${failures.map((f) => format(f.diagnostic)).join("; ")}`);
  }
  if (!host.plugins().some((plugin) => plugin.name === namespace)) {
    await scope.close();
    throw new Error(`plugin ${namespace} is not loaded`);
  }
  return {
    host,
    registry,
    logged,
    compose(location) {
      const state = registry.state;
      const registrations = state.registrations.filter((r) => r.key.startsWith(`${namespace}/`));
      return registry.compose({ location }, { version: state.version, registrations });
    },
    close: () => scope.close(),
  };
}

function format(diagnostic: Diagnostic): string {
  return `${diagnostic.plugin} ${diagnostic.phase}${diagnostic.key === undefined ? "" : ` ${diagnostic.key}`}: ${diagnostic.message}`;
}

/** A fresh temp folder (real path, so it compares equal to what programs print); `remove` deletes it. */
export function tempFolder(prefix: string): { readonly path: string; remove(): void } {
  const folder = realpathSync(mkdtempSync(path.join(os.tmpdir(), `context-host-${prefix}-`)));
  return { path: folder, remove: () => rmSync(folder, { recursive: true, force: true }) };
}

/** Runs git in `cwd` for test setup, isolated from the user's and system's git config. */
export function git(cwd: string, ...args: string[]): string {
  return execFileSync("git", args, {
    cwd,
    encoding: "utf8",
    env: {
      ...process.env,
      GIT_CONFIG_GLOBAL: "/dev/null",
      GIT_CONFIG_NOSYSTEM: "1",
      LC_ALL: "C",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
}

export const { initialize, reconcile } = SystemContext;
