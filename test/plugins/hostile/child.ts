// Runs one hostile scenario in this process: one line as each host call starts and ends,
// then the report on one line:
//   PROGRESS start <call> | PROGRESS end <call>
//   REPORT <json>
// Usage: node --import tsx test/plugins/hostile/child.ts <config.json>
// A process that ends (or is killed) without that line lost its host to a plugin.

import { readFileSync } from "node:fs";
import { runScenario, type ScenarioConfig } from "./scenario.ts";

// Taken before any plugin runs: a plugin in this realm may replace them.
const stringify = JSON.stringify;
const write = process.stdout.write.bind(process.stdout);
const exit = process.exit.bind(process);

const file = process.argv[2];
if (file === undefined) throw new Error("usage: child.ts <config.json>");
const config = JSON.parse(readFileSync(file, "utf8")) as ScenarioConfig;
const report = await runScenario(config, (line) => write(`PROGRESS ${line}\n`));
write(`REPORT ${stringify(report)}\n`, () => exit(0));
