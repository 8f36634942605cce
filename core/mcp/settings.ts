// Owns the `mcpServers` setting: each MCP server by name, reached over stdio
// (`command`) or Streamable HTTP (`url`), with the resources it exposes as Context
// Sources and whether its instructions are one. Checked with TypeBox; errors name the
// server and the field, never a value (env and headers hold secrets).

import Type, { type Static } from "typebox";
import { Compile } from "typebox/compile";
import { SettingInvalid } from "../base/errors.ts";

/** A server's name: the middle part of its sources' keys, `mcp/<server>/<name>`. */
export const serverNamePattern = /^[a-z0-9][a-z0-9._-]*$/;
/** A resource's name as given in the settings: the last part of its key. */
export const resourceNamePattern = /^[a-z0-9][a-z0-9._/-]*$/;

const Name = Type.String({ pattern: resourceNamePattern.source, description: "the resource's name in its key" });

/** One exposed resource: a URI, a URI template with its arguments, or `"*"` for every listed resource. */
const ResourceEntry = Type.Union([
  Type.String({ minLength: 1 }),
  Type.Object({ uri: Type.String({ minLength: 1 }), name: Type.Optional(Name) }, { additionalProperties: false }),
  Type.Object(
    { template: Type.String({ minLength: 1 }), arguments: Type.Record(Type.String(), Type.String()), name: Type.Optional(Name) },
    { additionalProperties: false },
  ),
]);

const common = {
  resources: Type.Optional(Type.Array(ResourceEntry, { description: 'URIs, { template, arguments }, or "*" for all listed' })),
  instructions: Type.Optional(Type.Boolean({ description: "the server's instructions are a source (default true)" })),
  deadlineMs: Type.Optional(
    Type.Integer({ minimum: 1, description: "how long the server may take at a boundary (default 2000)" }),
  ),
  maxAgeMs: Type.Optional(
    Type.Integer({ minimum: 0, description: "re-read age of a resource without subscriptions nor a ttlMs hint (default 0)" }),
  ),
};

const StdioServer = Type.Object(
  {
    command: Type.String({ minLength: 1 }),
    args: Type.Optional(Type.Array(Type.String())),
    env: Type.Optional(Type.Record(Type.String(), Type.String())),
    cwd: Type.Optional(Type.String({ minLength: 1 })),
    ...common,
  },
  { additionalProperties: false },
);

const HttpServer = Type.Object(
  {
    url: Type.String({ minLength: 1 }),
    headers: Type.Optional(Type.Record(Type.String(), Type.String())),
    ...common,
  },
  { additionalProperties: false },
);

/** An MCP server spawned over stdio. */
export type StdioServerSettings = Static<typeof StdioServer>;
/** An MCP server reached over Streamable HTTP. */
export type HttpServerSettings = Static<typeof HttpServer>;
/** One MCP server's settings. */
export type McpServerSettings = StdioServerSettings | HttpServerSettings;
/** One exposed resource entry. */
export type ResourceEntry = Static<typeof ResourceEntry>;
/** The `mcpServers` setting: each server by name. */
export type McpServersSettings = Readonly<Record<string, McpServerSettings>>;

/** The schema the host's settings use for `mcpServers`; `checkMcpServers` checks each server in depth. */
export const McpServersSchema = Type.Record(Type.String(), Type.Unknown(), {
  description: "MCP servers by name: { command, args?, env?, cwd? } or { url, headers? }, with resources? and instructions?",
});

const stdioValidator = Compile(StdioServer);
const httpValidator = Compile(HttpServer);

/** Checks `mcpServers`; throws `SettingInvalid` naming the server and the field (never a value). */
export function checkMcpServers(servers: unknown): asserts servers is McpServersSettings {
  if (typeof servers !== "object" || servers === null || Array.isArray(servers)) {
    throw new SettingInvalid({ setting: "mcpServers", reason: "must be an object of server name to server" });
  }
  for (const [name, server] of Object.entries(servers)) {
    const setting = `mcpServers.${name}`;
    if (!serverNamePattern.test(name)) {
      throw new SettingInvalid({
        setting,
        reason: `a server's name must match ${serverNamePattern} (it is part of source keys)`,
      });
    }
    if (typeof server !== "object" || server === null || Array.isArray(server)) {
      throw new SettingInvalid({ setting, reason: "must be an object { command, ... } or { url, ... }" });
    }
    const hasCommand = Object.hasOwn(server, "command");
    const hasUrl = Object.hasOwn(server, "url");
    if (hasCommand === hasUrl) {
      throw new SettingInvalid({ setting, reason: "give either command (stdio) or url (Streamable HTTP)" });
    }
    const validator = hasCommand ? stdioValidator : httpValidator;
    const known = (hasCommand ? StdioServer : HttpServer).properties;
    if (!validator.Check(server)) {
      const first = validator.Errors(server)[0];
      const field = (first?.instancePath ?? "").replace(/^\//, "").replaceAll("/", ".");
      const isUnknown = first?.keyword === "boolean" && first.schemaPath.endsWith("/additionalProperties");
      const unknown = Object.keys(server).find((key) => !Object.hasOwn(known, key));
      if (isUnknown || unknown !== undefined) {
        throw new SettingInvalid({ setting: `${setting}.${unknown ?? field}`, reason: "unknown setting" });
      }
      throw new SettingInvalid({ setting: field === "" ? setting : `${setting}.${field}`, reason: first?.message ?? "invalid" });
    }
    const resources = (server as McpServerSettings).resources ?? [];
    resources.forEach((entry, index) => {
      if (typeof entry !== "object" || !("template" in entry)) return;
      for (const [, , name] of entry.template.matchAll(templateExpression)) {
        if (!Object.hasOwn(entry.arguments, name as string)) {
          throw new SettingInvalid({
            setting: `${setting}.resources.${index}.arguments`,
            reason: `no argument ${name} for the template's {${name}}`,
          });
        }
      }
    });
    if (hasUrl) {
      const { url } = server as HttpServerSettings;
      if (!URL.canParse(url) || !/^https?:$/.test(new URL(url).protocol)) {
        throw new SettingInvalid({ setting: `${setting}.url`, reason: "must be an http: or https: URL" });
      }
    }
  }
}

/** A level-1 URI template expression, `{name}` or `{+name}` (reserved expansion). */
export const templateExpression = /\{(\+?)([A-Za-z0-9_.]+)\}/g;

/** Expands a level-1 URI template with its arguments: `{x}` percent-encoded, `{+x}` keeping reserved characters. */
export function expandTemplate(template: string, args: Readonly<Record<string, string>>): string {
  return template.replace(templateExpression, (_match, reserved: string, name: string) => {
    const value = args[name] ?? "";
    return reserved === "+" ? encodeURI(value) : encodeURIComponent(value);
  });
}

/** Whether a server is spawned over stdio. */
export function isStdio(server: McpServerSettings): server is StdioServerSettings {
  return Object.hasOwn(server, "command");
}
