// Owns the one rule by which every command chooses its plugins: the ones named on the command
// line, else the settings file's `plugins`, else the working folder's ./plugins. A folder the
// user named that does not exist is an error naming it (`pluginEntry`, as each is read); the
// default folder that does not exist means no plugins, said once, in one line (`absentNote`).

import { existsSync } from "node:fs";
import path from "node:path";

/** The plugins a command loads, and the line to print once when the default folder is absent. */
export interface ChosenPlugins {
  /** Folders, plugin files and package names, each already checked where it was given. */
  readonly entries: readonly string[];
  /** Set when no plugin was named and ./plugins does not exist: why there are none, which the command says once. */
  readonly absentNote?: string;
}

/** The line a command prints, once, when there are no plugins because ./plugins does not exist. */
export const noPluginsLine = (absentNote: string) => `context-host: no plugins: ${absentNote}`;

/** How a user names plugins, for the note: `--plugins DIR` for most commands, a PLUGIN argument for `check`. */
export const namePluginsHint = "name plugins with --plugins DIR, or in context-host.json's plugins";

/**
 * Chooses the plugins: `given` (from the command line) when there are any, else
 * `fromSettings` when the settings file has `plugins` (even none: `[]`), else ./plugins in
 * `cwd` when it exists, else none, with the note that says why.
 */
export function choosePlugins(
  given: readonly string[],
  fromSettings: readonly string[] | undefined,
  cwd: string,
  hint: string = namePluginsHint,
): ChosenPlugins {
  if (given.length > 0) return { entries: given };
  if (fromSettings !== undefined) return { entries: fromSettings };
  const folder = path.join(cwd, "plugins");
  if (existsSync(folder)) return { entries: [folder] };
  return { entries: [], absentNote: `there is no plugins folder here (${folder}); ${hint}` };
}
