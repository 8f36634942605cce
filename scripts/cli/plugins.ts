// Owns `context-host plugins`: every plugin the host would load from its `plugins` entries
// (`--plugins`, else the settings file's, else ./plugins), with where each came from (its
// folder, or package@version), found as the host finds them and none of them loaded. A
// package whose plugins would not load (not installed, incompatible) says why on stderr.

import path from "node:path";
import { escapeControl, findPlugins, formatOrigin } from "../../core/index.ts";
import { parseCommandLine } from "./arguments.ts";
import { choosePlugins, noPluginsLine } from "./plugin-entries.ts";
import { loadSettings } from "./settings.ts";

/** Exit codes of `plugins`: 0 every entry found; 2 a package's plugins would not load. */
export const pluginsExitCodes = { ok: 0, notLoaded: 2 } as const;

export interface PluginsArgs {
  readonly plugins: readonly string[];
  /** Said once on stderr: no plugin was named and ./plugins does not exist. */
  readonly pluginsNote?: string;
  readonly json: boolean;
  readonly cwd: string;
}

/** The options of `plugins`: `[--plugins DIR|FILE|PACKAGE]... [--settings FILE] [--json]`. */
const pluginsLine = {
  command: "plugins",
  shared: ["plugins", "settings", "json"],
  own: {},
} as const;

/** Parses `plugins [--plugins DIR|FILE|PACKAGE]... [--settings FILE] [--json]`. */
export function parsePluginsArgs(args: readonly string[], cwd: string): PluginsArgs {
  const { options } = parseCommandLine(args, cwd, pluginsLine);
  const chosen = choosePlugins(options.plugins, loadSettings(options.settings, cwd, "plugins").plugins, cwd);
  return {
    plugins: chosen.entries,
    ...(chosen.absentNote === undefined ? {} : { pluginsNote: chosen.absentNote }),
    json: options.json,
    cwd,
  };
}

/** Lists the plugins (or prints them as JSON) and returns the exit code. */
export function listPlugins(args: PluginsArgs, io: { out: (text: string) => void; err: (text: string) => void }): number {
  if (args.pluginsNote !== undefined) io.err(noPluginsLine(args.pluginsNote));
  const found = findPlugins(args.plugins, { projectRoot: args.cwd });
  if (args.json) {
    // The problems as before `isInstalled`: a missing package says so in its message.
    const problems = found.problems.map(({ isInstalled: _isInstalled, ...problem }) => problem);
    io.out(JSON.stringify({ plugins: found.plugins, problems }, null, 2));
  } else {
    const shown = (file: string) => {
      const relative = path.relative(args.cwd, file);
      return escapeControl(relative === "" || relative.startsWith("..") ? file : relative);
    };
    const rows = found.plugins.map((plugin) => [
      escapeControl(plugin.id),
      escapeControl(formatOrigin(plugin.origin, args.cwd)),
      shown(plugin.file),
    ]);
    const widths = [0, 1].map((column) => Math.max(0, ...rows.map((row) => (row[column] as string).length)));
    for (const row of rows)
      io.out(`${(row[0] as string).padEnd(widths[0] as number)}  ${(row[1] as string).padEnd(widths[1] as number)}  ${row[2]}`);
    // An empty list the user chose (`"plugins": []`) needs no line; an absent ./plugins had its note.
    if (rows.length === 0 && args.plugins.length > 0)
      io.err(
        `no plugins in ${args.plugins.map((entry) => (path.isAbsolute(entry) ? shown(entry) : escapeControl(entry))).join(", ")}`,
      );
    for (const problem of found.problems)
      io.err(`${shown(problem.file)} [${escapeControl(problem.package)} package] ${escapeControl(problem.message)}`);
  }
  return found.problems.length > 0 ? pluginsExitCodes.notLoaded : pluginsExitCodes.ok;
}
