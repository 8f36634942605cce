// Owns what the command line says about itself: the usage texts of each command, the
// usage error, and the check of a plugin folder argument.

import { statSync } from "node:fs";
import path from "node:path";
import { ContextHostError } from "../../core/base/errors.ts";

/** Exit code of a usage error (EX_USAGE). */
export const usageExitCode = 64;

/**
 * Bad command-line use: printed with the command's usage on stderr, exit 64, never a stack
 * trace. The reason names the argument (`--plugins x: no such folder (…)`); the usage
 * printed after it is the command's.
 */
export class UsageInvalid extends ContextHostError {
  /** The command whose usage applies, when known. */
  readonly command: string | undefined;
  readonly reason: string;
  constructor(options: { readonly reason: string; readonly command?: string }) {
    super(options.reason);
    this.command = options.command;
    this.reason = options.reason;
  }
}

/** The commands, in the order `--help` lists them. */
export const commands = ["dev", "render", "check", "inspect", "help"] as const;
export type CommandName = (typeof commands)[number];

export const commandUsage: Readonly<Record<CommandName, string>> = {
  dev: `usage: context-host dev [--plugins DIR]... [--provider P --model M] [--base-url URL]
                        [--settings FILE] [--data DIR] [--inspect[=PORT]]

  A terminal session over your plugins, hot-reloading while it runs. At each Safe
  Provider-Turn Boundary it shows, set apart from the conversation, the Baseline System
  Context when a Context Epoch starts and each admitted Mid-Conversation System Message,
  then the reply. Plugin reloads and diagnostics appear as they happen.

  --plugins DIR     a plugin folder (repeatable; replaces the default ./plugins)
  --provider P      scripted (default: echoes your prompt, no key needed), anthropic
                    (key from ANTHROPIC_API_KEY) or openai (key from OPENAI_API_KEY)
  --model M         the model (needed with anthropic and openai)
  --base-url URL    the API root of an Anthropic- or OpenAI-compatible server
  --settings FILE   the settings file (default ./context-host.json when it exists):
                    { timeZone?, instructions?, pluginSettings?, mcpServers? }
  --data DIR        where sessions are kept (default ./.context-host)
  --inspect[=PORT]  also serve the browser inspector on 127.0.0.1

  In the session: /context /plugins /problems /mcp /compact /model P M /cd DIR /help /quit
  exit codes: 0 /quit or end of input; 130 Ctrl-C; 64 bad usage`,
  render: `usage: context-host render [--plugins DIR]... [--json] [--location DIR] [--settings FILE]

  Loads the plugins, initializes, and prints the Baseline System Context (core sources
  first, then plugin sources in key order).

  --plugins DIR     a plugin folder (repeatable; replaces the default ./plugins)
  --json            print { baseline, snapshot, plugins, diagnostics }
  --location DIR    the session location sources observe (default: the working folder)
  --settings FILE   the settings file (default ./context-host.json when it exists);
                    --config FILE is the same
  exit codes: 0 every plugin loaded; 2 a plugin failed (the rest still render);
              3 initialization blocked (the keys on stderr); 64 bad usage`,
  check: `usage: context-host check PLUGIN... [--json] [--location DIR] [--settings FILE]

  Loads each PLUGIN (a file, a plugin folder, or a folder of plugins) as the host does, in a
  worker of its own, with its settings from FILE's pluginSettings (default: context-host.json
  here, when there is one), and runs the conformance checks; one line per finding:
  file:line [plugin key] check: what is wrong — how to fix it
  exit codes: 0 every check passed (warnings allowed); 1 a check failed; 64 bad usage`,
  inspect: `usage: context-host inspect [DB] SESSION [--data DIR] [--model M] [--json]
       context-host inspect [DB] --session ID [--data DIR] [--model M] [--json]
       context-host inspect [DB] --list [--data DIR] [--json]

  Prints a stored session: its active Context Epoch (reason, Baseline, Context Snapshot),
  and its history, the Mid-Conversation System Messages included, with each reply's token
  usage, the totals and their cost.
  DB                a sessions file (default <data folder>/sessions.db)
  --data DIR        the data folder (default ./.context-host)
  --session ID      the session (or give it as SESSION)
  --list            list the stored sessions (id, provider/model, location, messages)
  --model M         what the active epoch's requests cost or would cost on model M, by the
                    cache model: cache read, write, input, dollars, and why a cached prefix
                    went unread (claude-* by Anthropic's rules, others by OpenAI's)
  --json            print { session, epoch, messages, total, usd[, cache] } ({ sessions } with --list)`,
  help: `usage: context-host help [COMMAND]

  Prints the usage of COMMAND, or of every command.`,
};

/** The summary `context-host --help` prints. */
export const overview = `usage: context-host <command> [options]

commands:
  dev      a live terminal session over your plugins: see what the model sees
  render   print the Baseline System Context your plugins produce
  check    run the conformance checks on plugins
  inspect  print a stored session's history, token usage and cost
  help     print the usage of a command

options anywhere: --help, -h (this text, or the command's); --version, -v
run \`context-host help COMMAND\` for a command's options.`;

/** Whether `name` is a command. */
export function isCommand(name: string): name is CommandName {
  return (commands as readonly string[]).includes(name);
}

/** Resolves a plugin folder argument; a path that does not exist or is not a folder is a usage error naming it. */
export function pluginFolder(value: string, cwd: string, command: CommandName): string {
  const folder = path.resolve(cwd, value);
  let isFolder: boolean;
  try {
    isFolder = statSync(folder).isDirectory();
  } catch {
    throw new UsageInvalid({ command, reason: `--plugins ${value}: no such folder (${folder})` });
  }
  if (!isFolder) throw new UsageInvalid({ command, reason: `--plugins ${value}: not a folder (${folder})` });
  return folder;
}

/** The value after an option, or a usage error saying what it needs. */
export function optionValue(args: readonly string[], index: number, option: string, what: string, command: CommandName): string {
  const value = args[index];
  if (value === undefined || value.startsWith("--")) throw new UsageInvalid({ command, reason: `${option} needs ${what}` });
  return value;
}
