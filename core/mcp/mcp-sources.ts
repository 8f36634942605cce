// Owns the MCP servers of a host as one more set of Context Sources: each configured
// server's resources and instructions are registered in the host's registry beside the
// plugin sources (keys `mcp/<server>/…`, in key order), and `prepare` is the boundary's
// one chance to talk to the servers. Nothing here wakes a session.

import type { Diagnostics } from "../base/diagnostics.ts";
import type { Scope } from "../base/scope.ts";
import type { Registry } from "../registry/registry.ts";
import type { McpServerInfo } from "./info.ts";
import { loadMcpSdk } from "./sdk.ts";
import { McpServer } from "./server.ts";
import { checkMcpServers, type McpServersSettings } from "./settings.ts";

export interface McpSourcesOptions {
  readonly servers: McpServersSettings;
  readonly registry: Registry;
  readonly diagnostics: Diagnostics;
  /** The working folder a stdio server's relative `cwd` is resolved against. */
  readonly cwd: string;
  /** Largest accepted resource value, UTF-8 bytes of its JSON (default 1 MiB). */
  readonly maxValueBytes?: number;
  readonly now?: () => number;
}

/** The started MCP sources of one host. */
export interface McpSources {
  /**
   * Run at each Safe Provider-Turn Boundary before composing: each server's due work, within its
   * deadline; `undefined` when no server has any (no promise, no timer: the usual boundary).
   */
  prepare(): Promise<void> | undefined;
  /** The servers and their resources. */
  servers(): McpServerInfo[];
}

/**
 * Starts the MCP servers' sources; none configured: none started and the SDK not loaded.
 * Servers connect in the background; closing `scope` ends them (stdio processes included).
 */
export async function startMcpSources(options: McpSourcesOptions, scope: Scope): Promise<McpSources | undefined> {
  checkMcpServers(options.servers);
  const names = Object.keys(options.servers).sort();
  if (names.length === 0) return undefined;
  const sdk = await loadMcpSdk();
  const servers: McpServer[] = [];
  for (const name of names) {
    const server = new McpServer({
      name,
      settings: options.servers[name] as McpServersSettings[string],
      sdk,
      registry: options.registry,
      diagnostics: options.diagnostics,
      cwd: options.cwd,
      clientVersion: "0.1.0",
      maxValueBytes: options.maxValueBytes ?? 1 << 20,
      now: options.now ?? (() => performance.now()),
    });
    void scope.add(() => server.close());
    server.start();
    servers.push(server);
  }
  return {
    prepare: () => {
      const pending: Array<Promise<void>> = [];
      for (const server of servers) {
        const preparing = server.prepare();
        if (preparing !== undefined) pending.push(preparing);
      }
      return pending.length === 0 ? undefined : Promise.all(pending).then(() => {});
    },
    servers: () => servers.map((server) => server.info()),
  };
}
