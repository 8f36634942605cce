#!/usr/bin/env node
// The `context-host` program: registers tsx so the TypeScript sources run as they are.
import { register } from "tsx/esm/api";

// A reader that stops early (`| head`) is not an error of ours.
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (error) => {
    if (error.code === "EPIPE") process.exit(process.exitCode ?? 0);
    throw error;
  });
}

register();
const { main } = await import("./main.ts");
process.exitCode = await main(process.argv.slice(2));
