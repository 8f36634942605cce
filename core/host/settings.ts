// Owns the host's settings schema: the time zone, the global instruction file and
// the discovery switch, checked with TypeBox, with errors naming the setting.

import Type from "typebox";
import { Compile } from "typebox/compile";
import { SettingInvalid } from "../base/errors.ts";
import { checkMcpServers, McpServersSchema } from "../mcp/settings.ts";
import { checkTimeZone } from "../sources/date.ts";

/**
 * The schema of the `HostOptions` (host.ts) that are settings rather than wiring: what
 * `createHost` and a settings file are checked against. Other options pass unchecked.
 * @internal
 */
export const HostOptionsSchema = Type.Object(
  {
    timeZone: Type.Optional(Type.String({ minLength: 1, description: "IANA time zone of core/date; host-local when unset" })),
    plugins: Type.Optional(
      Type.Array(Type.String({ minLength: 1 }), {
        description: "plugin folders, plugin files and installed plugin package names (replace ./plugins)",
      }),
    ),
    isolation: Type.Optional(
      Type.Union([Type.Literal("worker"), Type.Literal("none")], {
        description: "where plugin code runs: each plugin in a worker thread of its own, or trusted code in the host's thread",
      }),
    ),
    deadlineMs: Type.Optional(Type.Integer({ minimum: 1, description: "plugin loader deadline, ms" })),
    setupDeadlineMs: Type.Optional(Type.Integer({ minimum: 1, description: "plugin module code and setup deadline, ms" })),
    disposeDeadlineMs: Type.Optional(Type.Integer({ minimum: 1, description: "plugin disposers' deadline, ms" })),
    closeTimeoutMs: Type.Optional(
      Type.Integer({ minimum: 0, description: "how long close() lets steps in flight finish before abandoning them, ms" }),
    ),
    instructions: Type.Optional(
      Type.Object(
        {
          globalFile: Type.Optional(Type.Union([Type.String({ minLength: 1 }), Type.Literal(false)])),
          discovery: Type.Optional(Type.Boolean()),
          maxBytes: Type.Optional(Type.Integer({ minimum: 1 })),
          maxReadBytes: Type.Optional(Type.Integer({ minimum: 1 })),
        },
        { additionalProperties: false },
      ),
    ),
    mcpServers: Type.Optional(McpServersSchema),
  },
  { additionalProperties: true },
);

const validator = Compile(HostOptionsSchema);

/**
 * Checks the settings part of `HostOptions` (`timeZone`, `plugins`, `isolation`, the
 * deadlines, `instructions`, `mcpServers`) as `createHost` does, e.g. a settings file before
 * anything starts; other options pass unchecked. Throws `SettingInvalid` naming the setting
 * and what is wrong.
 */
export function checkSettings(settings: unknown): void {
  if (!validator.Check(settings)) {
    const first = validator.Errors(settings)[0];
    const setting = (first?.instancePath ?? "").replace(/^\//, "").replaceAll("/", ".") || "(options)";
    // A property the schema does not allow fails as `schema is false`: say what that means.
    const isUnknown = first?.keyword === "boolean" && first.schemaPath.endsWith("/additionalProperties");
    throw new SettingInvalid({ setting, reason: isUnknown ? "unknown setting" : (first?.message ?? "invalid") });
  }
  const { timeZone, mcpServers } = settings as { timeZone?: string; mcpServers?: unknown };
  if (timeZone !== undefined) checkTimeZone(timeZone);
  if (mcpServers !== undefined) checkMcpServers(mcpServers);
}
