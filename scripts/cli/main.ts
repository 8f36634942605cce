// Owns the command line: `context-host <command> [options]`.

import { dateSource } from "../../core/builtins/date.ts";
import { environmentSource } from "../../core/builtins/environment.ts";
import { InstructionService } from "../../core/instructions/service.ts";
import { systemClock } from "../../core/plugins/services.ts";
import { parseRenderArgs, render, UsageError } from "./render.ts";

const usage = `usage: context-host render [--plugins DIR]... [--json] [--location DIR]

  render   load the plugins, initialize, and print the Baseline System Context
           (core sources first, then plugin sources in key order).
           --plugins DIR   a plugin folder (repeatable; replaces the default ./plugins)
           --json          print { baseline, snapshot, plugins, diagnostics }
           --location DIR  the session location sources observe (default: the working folder)

exit codes: 0 every plugin loaded; 2 a plugin failed (the rest still render);
            3 initialization blocked (the keys on stderr); 64 bad usage`;

/** Runs the command line and returns the exit code. */
export async function main(args: readonly string[]): Promise<number> {
  const [command, ...rest] = args;
  try {
    if (command === "render") {
      const parsed = parseRenderArgs(rest, process.cwd());
      return await render({
        ...parsed,
        // The built-in core sources, as a host has them (instruction problems go to stderr).
        core: [
          dateSource({ clock: systemClock }),
          environmentSource(),
          new InstructionService({
            report: (problem) => process.stderr.write(`${problem.file}: ${problem.message}\n`),
          }).registration(),
        ],
        out: (text) => process.stdout.write(`${text}\n`),
        err: (text) => process.stderr.write(`${text}\n`),
      });
    }
    if (command === undefined || command === "help" || command === "--help") {
      process.stdout.write(`${usage}\n`);
      return command === undefined ? 64 : 0;
    }
    throw new UsageError(`unknown command ${JSON.stringify(command)}`);
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`context-host: ${error.message}\n${usage}\n`);
      return 64;
    }
    throw error;
  }
}
