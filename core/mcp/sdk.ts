// Owns loading the MCP client SDK (`@modelcontextprotocol/client`, an optional peer
// dependency: decision 141). It is imported only when `mcpServers` names a server, so a
// host without MCP servers neither needs nor loads it.

import type { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import type { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { McpClientMissing, mcpClientPackage } from "./errors.ts";

/** The parts of the SDK the MCP sources use. */
export interface McpSdk {
  readonly Client: typeof Client;
  readonly StdioClientTransport: typeof StdioClientTransport;
  readonly StreamableHTTPClientTransport: typeof StreamableHTTPClientTransport;
}

let loading: Promise<McpSdk> | undefined;

/** Loads the SDK once per process; rejects with `McpClientMissing` when it is not installed. */
export function loadMcpSdk(): Promise<McpSdk> {
  loading ??= (async () => {
    try {
      // Named through a constant: a program bundled with this module (the worker of `check`)
      // resolves the optional peer at run time, never at bundling.
      const [client, stdio] = (await Promise.all([import(mcpClientPackage), import(`${mcpClientPackage}/stdio`)])) as [
        typeof import("@modelcontextprotocol/client"),
        typeof import("@modelcontextprotocol/client/stdio"),
      ];
      return {
        Client: client.Client,
        StdioClientTransport: stdio.StdioClientTransport,
        StreamableHTTPClientTransport: client.StreamableHTTPClientTransport,
      };
    } catch (error) {
      loading = undefined;
      const code = (error as { code?: unknown } | null)?.code;
      if (code === "ERR_MODULE_NOT_FOUND" || code === "MODULE_NOT_FOUND") throw new McpClientMissing({ cause: error });
      throw error;
    }
  })();
  return loading;
}
