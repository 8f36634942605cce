#!/usr/bin/env node
// The `context-host` program as npm links it: the compiled command line in dist/ when it
// is there (always, in an installed package), else, in a clone of the repository that has
// not run `npm run build`, the TypeScript sources run through tsx (a dev dependency there),
// so `npx context-host` works right after `npm install`.

import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

if (existsSync(new URL("../dist/scripts/cli/context-host.js", import.meta.url))) {
  await import("../dist/scripts/cli/context-host.js");
} else {
  const source = fileURLToPath(new URL("../scripts/cli/context-host.ts", import.meta.url));
  let tsx;
  try {
    tsx = import.meta.resolve("tsx");
  } catch {
    process.stderr.write("context-host: dist/ is not built and tsx is not installed: run `npm run build`\n");
    process.exit(1);
  }
  const child = spawnSync(process.execPath, ["--import", tsx, source, ...process.argv.slice(2)], {
    stdio: "inherit",
  });
  process.exit(child.status ?? 1);
}
