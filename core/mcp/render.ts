// Owns what an MCP resource and a server's instructions look like as Context Sources:
// their keys, their values (the text of a read, JSON included) and their pure renderers.

import Type, { type Static } from "typebox";
import type { Key } from "../system-context/index.ts";

/** The namespace of every MCP source key. */
export const mcpNamespace = "mcp";

/** The key of a server's instructions source. */
export function instructionsKey(server: string): Key {
  return `${mcpNamespace}/${server}/instructions`;
}

/**
 * A resource's name in its key, from its URI: the scheme left out, lower case, every run of
 * other characters than `a-z 0-9 . _ / -` one `-`, no empty path parts.
 */
export function nameOfUri(uri: string): string {
  const name = uri
    .replace(/^[a-z][a-z0-9+.-]*:\/*/i, "")
    .toLowerCase()
    .replace(/[^a-z0-9._/-]+/g, "-")
    .replace(/\/{2,}/g, "/")
    .replace(/^[^a-z0-9]+/, "")
    .replace(/\/+$/, "");
  return name === "" ? "resource" : name;
}

/** A read resource's value: each text part of its contents. */
export const ResourceValue = Type.Object({
  uri: Type.String(),
  contents: Type.Array(Type.Object({ uri: Type.String(), mimeType: Type.Optional(Type.String()), text: Type.String() })),
});
export type ResourceValue = Static<typeof ResourceValue>;

/** A server's instructions, as `initialize` gave them. */
export const InstructionsValue = Type.String();

const escapeAttribute = (text: string) => text.replaceAll("&", "&amp;").replaceAll('"', "&quot;").replaceAll("<", "&lt;");

function describeResource(server: string, value: ResourceValue): string {
  const parts = value.contents.map((part) => {
    const type = part.mimeType === undefined ? "" : ` type="${escapeAttribute(part.mimeType)}"`;
    return `<mcp-resource server="${escapeAttribute(server)}" uri="${escapeAttribute(part.uri)}"${type}>\n${part.text}\n</mcp-resource>`;
  });
  return parts.length === 0
    ? `<mcp-resource server="${escapeAttribute(server)}" uri="${escapeAttribute(value.uri)}" empty="true"></mcp-resource>`
    : parts.join("\n");
}

/** The renderers of a resource source. */
export function resourceRenderers(server: string) {
  return {
    baseline: (current: ResourceValue) => describeResource(server, current),
    update: (_previous: ResourceValue, current: ResourceValue) =>
      `The MCP resource ${current.uri} of server ${server} is now:\n${describeResource(server, current)}`,
    removed: (previous: ResourceValue) => `The MCP resource ${previous.uri} of server ${server} no longer applies.`,
  };
}

/** The renderers of an instructions source. */
export function instructionsRenderers(server: string) {
  const describe = (text: string) => `<mcp-instructions server="${escapeAttribute(server)}">\n${text}\n</mcp-instructions>`;
  return {
    baseline: (current: string) => describe(current),
    update: (_previous: string, current: string) => `The instructions of MCP server ${server} are now:\n${describe(current)}`,
    removed: () => `The instructions of MCP server ${server} no longer apply.`,
  };
}
