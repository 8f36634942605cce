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
 * A resource's name in its key (`mcp/<server>/<name>`): the name the server lists it under,
 * else (no name, or none left of it) its URI without the scheme. Made a key part: lower case,
 * every run of other characters than `a-z 0-9 . _ / -` one `-`, no empty path parts, starting
 * with a letter or a digit and ending without `-` or `/`; `resource` when nothing is left.
 */
export function resourceKeyName(resource: { readonly uri: string; readonly name?: string | undefined }): string {
  const fromName = resource.name === undefined ? "" : keyPartOf(resource.name);
  if (fromName !== "") return fromName;
  const fromUri = keyPartOf(resource.uri.replace(/^[a-z][a-z0-9+.-]*:\/*/i, ""));
  return fromUri === "" ? "resource" : fromUri;
}

function keyPartOf(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^a-z0-9._/-]+/g, "-")
    .replace(/\/{2,}/g, "/")
    .replace(/^[^a-z0-9]+/, "")
    .replace(/[-/]+$/, "");
}

/**
 * A read resource's value: its text, when its contents are one text part of its own URI
 * without a MIME type (the common case, and the cheapest to compare at every boundary);
 * otherwise each text part of its contents.
 */
export const ResourceValue = Type.Union([
  Type.String(),
  Type.Object({
    uri: Type.String(),
    contents: Type.Array(Type.Object({ uri: Type.String(), mimeType: Type.Optional(Type.String()), text: Type.String() })),
  }),
]);
export type ResourceValue = Static<typeof ResourceValue>;
type ResourceParts = Exclude<ResourceValue, string>["contents"];

/** The value of a read's text parts. */
export function resourceValueOf(uri: string, contents: ResourceParts): ResourceValue {
  const [only] = contents;
  if (contents.length === 1 && only !== undefined && only.uri === uri && only.mimeType === undefined) return only.text;
  return { uri, contents };
}

/** A server's instructions, as `initialize` gave them. */
export const InstructionsValue = Type.String();

const escapeAttribute = (text: string) => text.replaceAll("&", "&amp;").replaceAll('"', "&quot;").replaceAll("<", "&lt;");

function describeResource(server: string, uri: string, value: ResourceValue): string {
  if (typeof value === "string") value = { uri, contents: [{ uri, text: value }] };
  const parts = value.contents.map((part) => {
    const type = part.mimeType === undefined ? "" : ` type="${escapeAttribute(part.mimeType)}"`;
    return `<mcp-resource server="${escapeAttribute(server)}" uri="${escapeAttribute(part.uri)}"${type}>\n${part.text}\n</mcp-resource>`;
  });
  return parts.length === 0
    ? `<mcp-resource server="${escapeAttribute(server)}" uri="${escapeAttribute(value.uri)}" empty="true"></mcp-resource>`
    : parts.join("\n");
}

/** The renderers of the source of resource `uri`. */
export function resourceRenderers(server: string, uri: string) {
  return {
    baseline: (current: ResourceValue) => describeResource(server, uri, current),
    update: (_previous: ResourceValue, current: ResourceValue) =>
      `The MCP resource ${uri} of server ${server} is now:\n${describeResource(server, uri, current)}`,
    removed: () => `The MCP resource ${uri} of server ${server} no longer applies.`,
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
