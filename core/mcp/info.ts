// Owns what a host tells about its MCP servers: each server's state and its exposed
// resources, for the dev host's `/mcp` and the inspector.

import type { Key } from "../system-context/index.ts";

/** One exposed resource, as the dev host and the inspector list it. */
export interface McpResourceInfo {
  readonly key: Key;
  readonly uri: string;
  /** `read`: its value is known and current; `changed`: a read is due; `unread`: never read; `failed`: its last read failed. */
  readonly state: "read" | "changed" | "unread" | "failed";
  readonly isSubscribed: boolean;
  /** How long its last read took, ms. */
  readonly readMs?: number;
  /** How many times it was read. */
  readonly reads: number;
}

/** One server, as the dev host and the inspector list it. */
export interface McpServerInfo {
  readonly name: string;
  readonly transport: "stdio" | "http";
  readonly state: "connecting" | "connected" | "down" | "closed";
  readonly canSubscribe: boolean;
  readonly instructionsKey?: Key;
  readonly resources: readonly McpResourceInfo[];
}
