// `npm start`: `context-host dev` over this project's plugins (plugins/) and the example
// plugins (examples/plugins/), with the scripted provider, which echoes your prompt, so
// no key is needed. Any further arguments are passed on, such as
// `npm start -- --provider anthropic --model claude-sonnet-4-5`.

import path from "node:path";
import { main } from "../scripts/cli/main.ts";

const root = path.resolve(import.meta.dirname, "..");
const code = await main([
  "dev",
  "--plugins",
  path.join(root, "plugins"),
  "--plugins",
  path.join(root, "examples/plugins"),
  "--settings",
  path.join(root, "examples/context-host.json"),
  ...process.argv.slice(2),
]);
if (code === 130) process.exit(code);
process.exitCode = code;
