// Owns the MCP sources' named errors.

import { ContextHostError } from "../base/errors.ts";

/** The package that holds the MCP client (an optional peer dependency). */
export const mcpClientPackage = "@modelcontextprotocol/client";

/** `mcpServers` names a server, and the MCP client package is not installed. */
export class McpClientMissing extends ContextHostError {
  constructor(options: { readonly cause: unknown }) {
    super(`mcpServers needs the MCP client: install it with \`npm install ${mcpClientPackage}@^2.4.0\``, options);
  }
}
