#!/usr/bin/env node
// The `context-host` program: runs the command line and exits with its code. Compiled
// to dist/ like the library, so it runs on plain Node.

import { main } from "./main.ts";

// A reader that stops early (`| head`) is not an error of ours.
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (error: NodeJS.ErrnoException) => {
    if (error.code === "EPIPE") process.exit(process.exitCode ?? 0);
    throw error;
  });
}

process.exitCode = await main(process.argv.slice(2));
