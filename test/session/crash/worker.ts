// The crash worker: a real process that opens a host on a real SQLite file (or a
// PostgreSQL schema) and runs boundaries as fast as it can until it is killed. It never
// stops on its own.
//
//   node --import tsx test/session/crash/worker.ts <dataDir> <seed> <tag> [<postgresUrl> <schema>]
//
// The scenario (scenario.ts) changes its core Context Sources pseudo-randomly between
// steps and loops: maybe prompt, step, sometimes compact, switch model or move. One line
// per event goes to stdout, a pipe: writes to a pipe are synchronous on Linux, so every
// printed line reaches the harness even when the process is killed right after.
//   READY <session>         the host is open and the session exists
//   P <text>                a prompt was admitted (host.prompt resolved)
//   S <sha256>              a step replied; the hash of the Baseline it sent
//   C> <op> <revision>      a store commit begins (boundary, reply or summary)
//   C< <op> <revision>      that commit returned
// Anything unexpected is thrown: the process then exits on its own, which the harness
// reports as a failure.

import { databaseOf } from "./databases.ts";
import { marks } from "./protocol.ts";
import { openScenario } from "./scenario.ts";

const [dataDir, seed, tag, ...rest] = process.argv.slice(2);
if (dataDir === undefined || seed === undefined || tag === undefined) {
  throw new Error("usage: worker.ts <dataDir> <seed> <tag> [<postgresUrl> <schema>]");
}

const say = (line: string) => {
  process.stdout.write(`${line}\n`);
};
const scenario = await openScenario({ dataDir, seed: Number(seed), tag, say, database: databaseOf(dataDir, rest) });
say(`${marks.ready} ${scenario.sessionId}`);
for (;;) await scenario.iterate();
