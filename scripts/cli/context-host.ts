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

const code = await main(process.argv.slice(2));
// After Ctrl-C nothing is worth waiting for (a provider call still streaming, say): leave now.
if (code === 130) process.exit(code);
process.exitCode = code;
