// Owns what the command line says about itself: the usage texts of each command, the
// usage error, and the check of a plugin folder argument.

import { statSync } from "node:fs";
import path from "node:path";
import { ContextHostError, findPlugins, readPluginEntry } from "../../core/index.ts";

/** Exit code of a usage error (EX_USAGE). */
export const usageExitCode = 64;

/**
 * Bad command-line use: printed with the command's usage on stderr, exit 64, never a stack
 * trace. The reason names the argument (`--plugins x: no such folder or file (…)`); the usage
 * printed after it is the command's, or only a line saying where it is (`needsUsage` false:
 * a settings file's error, which the usage does not explain).
 */
export class UsageInvalid extends ContextHostError {
  /** The command whose usage applies, when known. */
  readonly command: string | undefined;
  readonly reason: string;
  /** Whether the command's usage helps (a bad argument), or only a hint to it does (a settings file's error). */
  readonly needsUsage: boolean;
  constructor(options: { readonly reason: string; readonly command?: string; readonly needsUsage?: boolean }) {
    super(options.reason);
    this.command = options.command;
    this.reason = options.reason;
    this.needsUsage = options.needsUsage ?? true;
  }
}

/** The one line after an error whose usage would not help: where the usage is. */
export const usageHint = (command: string | undefined) =>
  `(context-host ${command === undefined ? "" : `${command} `}--help prints the usage)`;

/** The commands, in the order `--help` lists them. */
export const commands = ["dev", "proxy", "render", "check", "plugins", "inspect", "help"] as const;
export type CommandName = (typeof commands)[number];

export const commandUsage: Readonly<Record<CommandName, string>> = {
  dev: `usage: context-host dev [--plugins DIR|FILE|PACKAGE]... [--provider P --model M] [--base-url URL]
                        [--settings FILE] [--data DIR] [--inspect[=PORT]]

  A terminal session over your plugins, hot-reloading while it runs. At each Safe
  Provider-Turn Boundary it shows, set apart from the conversation, the Baseline System
  Context when a Context Epoch starts and each admitted Mid-Conversation System Message,
  then the reply. Plugin reloads and diagnostics appear as they happen.

  --plugins DIR     a folder of plugins, a plugin file, or an installed plugin package's
                    name (repeatable; replaces the settings file's plugins and ./plugins)
  --provider P      scripted (default: echoes your prompt, no key needed), anthropic
                    (key from ANTHROPIC_API_KEY) or openai (key from OPENAI_API_KEY)
  --model M         the model (needed with anthropic and openai)
  --base-url URL    the API root of an Anthropic- or OpenAI-compatible server
  --settings FILE   the settings file (default ./context-host.json when it exists):
                    { plugins?, timeZone?, instructions?, pluginSettings?, mcpServers? }
  --data DIR        where sessions are kept (default ./.context-host)
  --inspect[=PORT]  also serve the browser inspector on 127.0.0.1

  In the session: /context /plugins /problems /mcp /compact /model P M /cd DIR /help /quit
  exit codes: 0 /quit or end of input; 130 Ctrl-C; 64 bad usage`,
  proxy: `usage: context-host proxy [--port 4100] [--host 127.0.0.1] [--plugins DIR|FILE|PACKAGE]... [--data-dir DIR]
                          [--store postgres://…] [--anthropic-upstream URL] [--openai-upstream URL]
                          [--location DIR] [--settings FILE] [--token T] [--inspect[=PORT]]

  The context proxy: point an agent's API base URL at it (Claude Code, Codex, opencode,
  pi, any client of the Anthropic Messages, OpenAI Responses or Chat Completions APIs).
  Each conversation request gets the Baseline System Context once per Context Epoch and
  each changed source once, after the newest user message; the rest passes through.

  --port N          port on the host (default 4100; 0 picks a free one)
  --host H          address to listen on (default 127.0.0.1); any other needs --token
  --plugins DIR     a folder of plugins, a plugin file, or an installed plugin package's
                    name (repeatable; replaces the settings file's plugins and ./plugins)
  --data-dir DIR    where sessions are kept (default ./.context-host; SQLite)
  --store URL       a postgres:// URL: sessions shared by every proxy that names it
  --anthropic-upstream URL   default https://api.anthropic.com
  --openai-upstream URL      default https://api.openai.com
  --location DIR    where a session works when neither the x-context-host-location
                    header nor the agent says (default: the working folder)
  --settings FILE   the settings file (default ./context-host.json when it exists)
  --token T         a secret clients send as the x-context-host-token header (default
                    $CONTEXT_HOST_PROXY_TOKEN)
  --inspect[=PORT]  also serve the browser inspector on 127.0.0.1: each request with
                    its Baseline, updates and the provider's cache usage

  Claude Code: ANTHROPIC_BASE_URL=http://127.0.0.1:4100 claude
  Codex:       [model_providers.ctx] base_url = "http://127.0.0.1:4100/v1", wire_api = "responses"
  exit codes: 0 stopped by SIGINT or SIGTERM; 64 bad usage`,
  render: `usage: context-host render [--plugins DIR|FILE|PACKAGE]... [--json] [--location DIR] [--settings FILE]

  Loads the plugins, initializes, and prints the Baseline System Context (core sources
  first, then plugin sources in key order).

  --plugins DIR     a folder of plugins, a plugin file, or an installed plugin package's
                    name (repeatable; replaces the settings file's plugins and ./plugins)
  --json            print { baseline, snapshot, plugins, diagnostics }
  --location DIR    the session location sources observe (default: the working folder)
  --settings FILE   the settings file (default ./context-host.json when it exists);
                    --config FILE is the same
  exit codes: 0 every plugin loaded; 2 a plugin failed (the rest still render);
              3 initialization blocked (the keys on stderr); 64 bad usage`,
  check: `usage: context-host check [PLUGIN...] [--json] [--location DIR] [--settings FILE]

  Loads each PLUGIN (a file, a plugin folder, a folder of plugins, or an installed plugin
  package's name: the plugins its package.json declares; default the settings file's
  plugins, else ./plugins, as render) as the host does, in a worker of its own, with its settings from FILE's pluginSettings
  (default: context-host.json here, when there is one), and runs the conformance rules; one
  line per finding, and the code frame where the plugin's code threw:
  file:line:column [plugin key] rule: what is wrong — how to fix it
  exit codes: 0 every rule passed (warnings allowed); 1 a rule failed; 64 bad usage`,
  plugins: `usage: context-host plugins [--plugins DIR|FILE|PACKAGE]... [--settings FILE] [--json]

  Lists every plugin the host would load, and where it came from: its folder, or the
  package and version it is installed as. Nothing is loaded; a package whose plugins would
  not load (not installed, its peer range of context-host not met) says why on stderr.
  --plugins DIR     a folder of plugins, a plugin file, or an installed plugin package's
                    name (repeatable; default: the settings file's plugins, else ./plugins)
  --settings FILE   the settings file (default ./context-host.json when it exists)
  --json            print { plugins: [{ id, file, origin }], problems }
  exit codes: 0 every entry found; 2 a package's plugins would not load; 64 bad usage`,
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
  proxy    give any agent (Claude Code, Codex, …) your Context Sources through its base URL
  render   print the Baseline System Context your plugins produce
  check    run the conformance checks on plugins
  plugins  list the plugins the host would load, and where each came from
  inspect  print a stored session's history, token usage and cost
  help     print the usage of a command

options anywhere: --help, -h (this text, or the command's); --version, -v
run \`context-host help COMMAND\` for a command's options.`;

/** Whether `name` is a command. */
export function isCommand(name: string): name is CommandName {
  return (commands as readonly string[]).includes(name);
}

/**
 * Reads a `plugins` entry of the command line or the settings file (decision 131): a
 * folder of plugins or a plugin file (made absolute against `cwd`), or the name of a
 * package installed where Node finds it from `projectRoot` (kept as the name). Anything
 * else is a usage error naming it; `what` says where it was given (`--plugins x`).
 */
export function pluginEntry(
  value: string,
  cwd: string,
  command: CommandName,
  what = `--plugins ${value}`,
  projectRoot = cwd,
): string {
  const spec = readPluginEntry(value, cwd);
  if (spec.kind === "package") {
    const isMissing = findPlugins([spec.name], { projectRoot }).problems.some((problem) => !problem.isInstalled);
    if (!isMissing) return spec.name;
    throw new UsageInvalid({
      command,
      reason: `${what}: no such folder or file (${path.resolve(cwd, value)}), and no installed package ${value} (npm i ${value})`,
    });
  }
  let stats: ReturnType<typeof statSync>;
  try {
    stats = statSync(spec.path);
  } catch {
    throw new UsageInvalid({ command, reason: `${what}: no such folder or file (${spec.path})` });
  }
  if (stats.isFile() && !/\.(ts|js)$/.test(spec.path))
    throw new UsageInvalid({ command, reason: `${what}: not a folder or a plugin file (.ts, .js) (${spec.path})` });
  return spec.path;
}
