// Owns the command line: `context-host <command> [options]`, help and version anywhere,
// usage errors on stderr with exit 64, and no stack trace for a user's mistake.

import { readFileSync } from "node:fs";
import path from "node:path";
import { ContextHostError } from "../../core/index.ts";
import { check, parseCheckArgs } from "./check.ts";
import { parseDevArgs } from "./dev/args.ts";
import { dev } from "./dev/dev.ts";
import { inspect, parseInspectArgs } from "./inspect.ts";
import { messageOf } from "./message.ts";
import { listPlugins, parsePluginsArgs } from "./plugins.ts";
import { parseProxyArgs, proxy } from "./proxy.ts";
import { parseRenderArgs, render } from "./render.ts";
import { type CommandName, commandUsage, isCommand, overview, UsageInvalid, usageExitCode, usageHint } from "./usage.ts";

/** Where the command line reads and writes; the process's own by default. */
export interface Io {
  readonly cwd: string;
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
  /** The terminal `dev` talks to (default the process's stdin and stdout). */
  readonly input?: NodeJS.ReadableStream & { isTTY?: boolean };
  readonly output?: NodeJS.WritableStream & { isTTY?: boolean };
  readonly env?: NodeJS.ProcessEnv;
  /** Ends a long-running command (`proxy`) as SIGINT would. */
  readonly stop?: Promise<unknown>;
}

const processIo: Io = {
  cwd: process.cwd(),
  out: (text) => process.stdout.write(`${text}\n`),
  err: (text) => process.stderr.write(`${text}\n`),
};

const isHelp = (arg: string) => arg === "--help" || arg === "-h";
const isVersion = (arg: string) => arg === "--version" || arg === "-v";

/** Runs the command line and returns the exit code. */
export async function main(args: readonly string[], io: Io = processIo): Promise<number> {
  const [first, ...rest] = args;
  const command: CommandName | undefined = first !== undefined && isCommand(first) ? first : undefined;
  try {
    // Help wins anywhere on the line, then the version.
    if (args.some(isHelp)) {
      io.out(command === undefined || command === "help" ? overview : commandUsage[command]);
      return 0;
    }
    if (args.some(isVersion) || first === "version") {
      io.out(packageVersion());
      return 0;
    }
    switch (first) {
      case undefined:
        io.err(overview);
        return usageExitCode;
      case "help": {
        const [topic, ...extra] = rest;
        if (extra.length > 0) throw new UsageInvalid({ command: "help", reason: "help takes one command" });
        if (topic === undefined) io.out(overview);
        else if (isCommand(topic)) io.out(commandUsage[topic]);
        else throw new UsageInvalid({ command: "help", reason: `no command ${JSON.stringify(topic)}` });
        return 0;
      }
      case "render":
        return await render({ ...parseRenderArgs(rest, io.cwd), out: io.out, err: io.err });
      case "check":
        return await check(parseCheckArgs(rest, io.cwd), io);
      case "plugins":
        return listPlugins(parsePluginsArgs(rest, io.cwd), io);
      case "inspect":
        return await inspect({ ...parseInspectArgs(rest, io.cwd), out: io.out, err: io.err });
      case "proxy":
        return await proxy(parseProxyArgs(rest, io.cwd, io.env ?? process.env), {
          out: io.out,
          err: io.err,
          ...(io.stop === undefined ? {} : { stop: io.stop }),
        });
      case "dev":
        return await dev(parseDevArgs(rest, io.cwd), {
          cwd: io.cwd,
          input: io.input ?? process.stdin,
          output: io.output ?? process.stdout,
          err: io.err,
          env: io.env ?? process.env,
        });
      default:
        throw new UsageInvalid({ reason: `unknown command ${JSON.stringify(first)}` });
    }
  } catch (error) {
    if (error instanceof UsageInvalid) {
      io.err(usageErrorText(error));
      return usageExitCode;
    }
    // A named condition (a setting, a location, a provider) is the user's to fix: its message says how.
    if (error instanceof ContextHostError) {
      io.err(`context-host: ${error.name}: ${messageOf(error)}`);
      return 1;
    }
    throw error;
  }
}

/**
 * A usage error as printed: the program and the command it is about, the reason, then the
 * command's usage (a bad argument) or the line saying where it is (a settings file's error).
 */
function usageErrorText(error: UsageInvalid): string {
  const command = error.command as CommandName | undefined;
  const program = command === undefined ? "context-host" : `context-host ${command}`;
  const usage = command === undefined ? overview : commandUsage[command];
  return `${program}: ${error.message}\n${error.needsUsage ? `\n${usage}` : usageHint(command)}`;
}

/**
 * The version in this package's package.json: the nearest one up from this file named
 * `context-host` (scripts/cli/ in the repository, dist/scripts/cli/ in an install).
 */
export function packageVersion(from: string = import.meta.dirname): string {
  for (let folder = from; ; folder = path.dirname(folder)) {
    try {
      const manifest = JSON.parse(readFileSync(path.join(folder, "package.json"), "utf8")) as { name?: string; version?: string };
      if (manifest.name === "context-host" && typeof manifest.version === "string") return manifest.version;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    }
    if (path.dirname(folder) === folder) throw new Error(`no context-host package.json above ${from}`);
  }
}
