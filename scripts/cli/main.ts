// Owns the command line: `context-host <command> [options]`.

import { readFileSync } from "node:fs";
import path from "node:path";
import { check, parseCheckArgs } from "./check.ts";
import { inspect, parseInspectArgs } from "./inspect.ts";
import { parseRenderArgs, render, UsageError } from "./render.ts";

const usage = `usage: context-host render [--plugins DIR]... [--json] [--location DIR] [--config FILE]
       context-host check PLUGIN... [--json] [--location DIR]
       context-host inspect SESSION [--data DIR] [--json]
       context-host --version

  render   load the plugins, initialize, and print the Baseline System Context
           (core sources first, then plugin sources in key order).
           --plugins DIR   a plugin folder (repeatable; replaces the default ./plugins)
           --json          print { baseline, snapshot, plugins, diagnostics }
           --location DIR  the session location sources observe (default: the working folder)
           --config FILE   JSON { timeZone?, instructions?, pluginSettings? }, as createHost takes them

  check    load each PLUGIN (a file, a plugin folder, or a folder of plugins) as the host
           does and run the conformance checks; one line per finding:
           file:line [plugin key] check: what is wrong — how to fix it

  inspect  print a session's history with each reply's token usage, the totals and their cost
           SESSION         the session id
           --data DIR      the data folder (default ./.context-host)
           --json          print { session, messages, total, usd }

exit codes (render): 0 every plugin loaded; 2 a plugin failed (the rest still render);
            3 initialization blocked (the keys on stderr); 64 bad usage
exit codes (check): 0 every check passed (warnings allowed); 1 a check failed; 64 bad usage`;

/** Where the command line reads and writes; the process's own by default. */
export interface Io {
  readonly cwd: string;
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
}

const processIo: Io = {
  cwd: process.cwd(),
  out: (text) => process.stdout.write(`${text}\n`),
  err: (text) => process.stderr.write(`${text}\n`),
};

/** Runs the command line and returns the exit code. */
export async function main(args: readonly string[], io: Io = processIo): Promise<number> {
  const [command, ...rest] = args;
  try {
    if (command === "render") {
      const parsed = parseRenderArgs(rest, io.cwd);
      return await render({ ...parsed, out: io.out, err: io.err });
    }
    if (command === "check") return await check(parseCheckArgs(rest, io.cwd), io);
    if (command === "inspect") return await inspect({ ...parseInspectArgs(rest, io.cwd), out: io.out, err: io.err });
    if (command === "--version" || command === "version") {
      io.out(packageVersion());
      return 0;
    }
    if (command === undefined || command === "help" || command === "--help") {
      io.out(usage);
      return command === undefined ? 64 : 0;
    }
    throw new UsageError(`unknown command ${JSON.stringify(command)}`);
  } catch (error) {
    if (error instanceof UsageError) {
      io.err(`context-host: ${error.message}\n${usage}`);
      return 64;
    }
    throw error;
  }
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
