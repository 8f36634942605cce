// Owns the settings file of `dev` and `render` (`context-host.json`): the time zone, the
// instruction settings and each plugin's config, checked with TypeBox before anything
// starts; every error names the file and the setting.

import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import Type from "typebox";
import { Compile } from "typebox/compile";
import { checkHostSettings, type InstructionSettings, type McpServersSettings } from "../../core/index.ts";
import { messageOf } from "./message.ts";
import { type CommandName, pluginEntry, UsageInvalid } from "./usage.ts";

/** The settings file's name, looked for in the working folder. */
export const settingsFileName = "context-host.json";

/** What a settings file holds, as `createHost` takes it. */
export interface CliSettings {
  /**
   * Plugin folders, plugin files and package names; paths relative to the settings file's
   * folder, made absolute here (they replace ./plugins when no `--plugins` is given).
   */
  readonly plugins?: readonly string[];
  readonly timeZone?: string;
  readonly instructions?: InstructionSettings;
  /** Each plugin's config by plugin name; the plugin's own `config` schema checks it at load. */
  readonly pluginSettings?: Readonly<Record<string, unknown>>;
  /** MCP servers whose resources and instructions are Context Sources, in the ecosystem's shape. */
  readonly mcpServers?: McpServersSettings;
}

// The file's own shape; `checkHostSettings` (the host's schema) then checks the host settings in depth.
const SettingsFile = Type.Object(
  {
    $schema: Type.Optional(Type.String()),
    plugins: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
    timeZone: Type.Optional(Type.Unknown()),
    instructions: Type.Optional(Type.Unknown()),
    pluginSettings: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    mcpServers: Type.Optional(Type.Unknown()),
  },
  { additionalProperties: false },
);
const fileValidator = Compile(SettingsFile);

/**
 * Reads the settings: `explicit` (it must exist), else `context-host.json` in `cwd` when
 * it exists, else none. Any problem is a usage error naming the file and the setting.
 */
export function loadSettings(explicit: string | undefined, cwd: string, command: CommandName): CliSettings {
  const file = explicit === undefined ? path.join(cwd, settingsFileName) : path.resolve(cwd, explicit);
  if (explicit === undefined && !existsSync(file)) return {};
  return readSettingsFile(file, command, cwd);
}

/** Reads and checks one settings file; package names in `plugins` must be installed where Node finds them from `projectRoot`. */
export function readSettingsFile(file: string, command: CommandName, projectRoot: string = path.dirname(file)): CliSettings {
  const fail = (reason: string) => new UsageInvalid({ command, reason: `settings file ${file}: ${reason}`, needsUsage: false });
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw fail(code === "ENOENT" ? "no such file" : code === "EISDIR" ? "is a folder, not a file" : messageOf(error));
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw fail(`not JSON: ${messageOf(error)}`);
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw fail("expected a JSON object { plugins?, timeZone?, instructions?, pluginSettings?, mcpServers? }");
  }
  if (!fileValidator.Check(parsed)) {
    const first = fileValidator.Errors(parsed)[0];
    const unknown = Object.keys(parsed).find((name) => !Object.hasOwn(SettingsFile.properties, name));
    if (unknown !== undefined) {
      throw fail(`setting ${unknown}: unknown setting (known: plugins, timeZone, instructions, pluginSettings, mcpServers)`);
    }
    const setting = (first?.instancePath ?? "").replace(/^\//, "").replaceAll("/", ".") || "(file)";
    throw fail(
      `setting ${setting}: ${setting === "pluginSettings" ? "must be an object of plugin name to config" : (first?.message ?? "invalid")}`,
    );
  }
  try {
    checkHostSettings(parsed);
  } catch (error) {
    throw fail(messageOf(error));
  }
  const { $schema: _schema, ...settings } = parsed as CliSettings & { $schema?: string };
  if (settings.plugins === undefined) return settings;
  const folder = path.dirname(file);
  const plugins = settings.plugins.map((entry, index) => {
    try {
      return pluginEntry(entry, folder, command, `setting plugins[${index}] ${JSON.stringify(entry)}`, projectRoot);
    } catch (error) {
      throw fail(messageOf(error));
    }
  });
  return { ...settings, plugins };
}
