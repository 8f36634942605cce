// Owns `context-host check [PLUGIN…]` (default: the settings file's plugins, else ./plugins, as
// `render`): load each plugin as
// the host does (in a worker of its own, decision 083), run every conformance rule, print one
// line per finding (with a code frame where the plugin's code threw), exit 0 (all pass;
// warnings allowed), 1 (a rule failed) or 64 (bad usage).

import { existsSync, statSync } from "node:fs";
import path from "node:path";
import { checkPluginsIsolated, formatFinding, type PluginFinding } from "../../core/conformance.ts";
import { findPlugins, readPluginEntry } from "../../core/index.ts";
import { parseCommandLine, type ReadContext } from "./arguments.ts";
import { choosePlugins, noPluginsLine } from "./plugin-entries.ts";
import { loadSettings } from "./settings.ts";
import { pluginEntry, UsageInvalid } from "./usage.ts";

export const checkExitCodes = { ok: 0, failed: 1 } as const;

export interface CheckArgs {
  readonly plugins: readonly string[];
  /** Said once on stderr: no plugin was named and ./plugins does not exist. */
  readonly pluginsNote?: string;
  /** Why a named package's plugins (or some) cannot be checked: incompatible with this host, a declared file missing. */
  readonly packageProblems?: readonly string[];
  readonly json: boolean;
  readonly location: string;
  /** Plugin settings by plugin name, from the settings file (`--settings FILE`, else `context-host.json`). */
  readonly pluginSettings: Readonly<Record<string, unknown>>;
}

/** The options of `check`: `[PLUGIN...] [--json] [--location DIR] [--settings FILE]`. */
const checkLine = {
  command: "check",
  shared: ["json", "location", "settings"],
  own: {},
  readOperand: pluginOperand,
} as const;

/** A PLUGIN argument, checked as a `--plugins` value is, and named as given. */
function pluginOperand(text: string, at: ReadContext): string {
  return pluginEntry(text, at.cwd, at.command, text);
}

/**
 * Parses `check` arguments: `[PLUGIN...] [--json] [--location DIR] [--settings FILE]`; a PLUGIN
 * is a file, a plugin folder, a folder of plugins, or the name of an installed plugin package
 * (its declared plugins, decision 130). With none, the settings file's plugins, else the
 * working folder's `plugins/` when it exists, as `render` loads them (`choosePlugins`).
 */
export function parseCheckArgs(args: readonly string[], cwd: string): CheckArgs {
  const { options, operands } = parseCommandLine(args, cwd, checkLine);
  const settings = loadSettings(options.settings, cwd, "check");
  const chosen = choosePlugins(
    operands,
    settings.plugins,
    cwd,
    "name plugins as context-host check PLUGIN, or in context-host.json's plugins",
  );
  const plugins: string[] = [];
  const packageProblems: string[] = [];
  for (const arg of chosen.entries) {
    const spec = readPluginEntry(arg, cwd);
    if (spec.kind === "package") {
      const found = findPlugins([spec.name], { projectRoot: cwd });
      const missing = found.problems.find((problem) => !problem.isInstalled);
      if (missing !== undefined) throw new UsageInvalid({ command: "check", reason: missing.message });
      plugins.push(...found.plugins.map((plugin) => plugin.file));
      packageProblems.push(...found.problems.map((problem) => problem.message));
      continue;
    }
    const target = spec.path;
    if (!existsSync(target)) throw new UsageInvalid({ command: "check", reason: `no such file or folder: ${target}` });
    if (statSync(target).isFile()) {
      plugins.push(target);
      continue;
    }
    const index = ["index.ts", "index.js"].map((f) => path.join(target, f)).find((f) => existsSync(f));
    if (index !== undefined) plugins.push(index);
    else {
      const found = findPlugins([target]).plugins;
      if (found.length === 0)
        throw new UsageInvalid({
          command: "check",
          reason: `no plugin in ${target} (expected .ts/.js files or folders with index.ts)`,
        });
      plugins.push(...found.map((entry) => entry.file));
    }
  }
  return {
    plugins,
    ...(chosen.absentNote === undefined ? {} : { pluginsNote: chosen.absentNote }),
    ...(packageProblems.length === 0 ? {} : { packageProblems }),
    json: options.json,
    location: options.location ?? cwd,
    pluginSettings: settings.pluginSettings ?? {},
  };
}

/** Runs the checks; prints findings (or JSON) and returns the exit code. */
export async function check(args: CheckArgs, io: { out: (text: string) => void; err: (text: string) => void }): Promise<number> {
  if (args.pluginsNote !== undefined) io.err(noPluginsLine(args.pluginsNote));
  // Each plugin in a worker of its own, as the host runs it: one that loops or exits is a finding.
  const findings: PluginFinding[] = await checkPluginsIsolated(args.plugins, {
    location: args.location,
    pluginSettings: args.pluginSettings,
  });
  const problems = args.packageProblems ?? [];
  const failed = problems.length > 0 || findings.some((finding) => finding.severity === "error");
  if (args.json)
    io.out(
      JSON.stringify(
        { plugins: args.plugins, findings, ...(problems.length === 0 ? {} : { packageProblems: problems }) },
        null,
        2,
      ),
    );
  else {
    for (const problem of problems) io.err(`context-host check: ${problem}`);
    for (const finding of findings) io.out(formatFinding(finding, args.location));
    const errors = findings.filter((f) => f.severity === "error").length;
    io.err(`${args.plugins.length} plugin(s) checked: ${errors} error(s), ${findings.length - errors} warning(s)`);
  }
  return failed ? checkExitCodes.failed : checkExitCodes.ok;
}
