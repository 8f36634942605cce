// The crash worker: a real process that opens a host on a real SQLite file (or a
// PostgreSQL schema) and runs boundaries as fast as it can until it is killed. It never
// stops on its own.
//
//   node --import tsx test/session/crash/worker.ts <dataDir> <seed> <tag> [<postgresUrl> <schema>]
//
// The scenario (scenario.ts) changes its core Context Sources pseudo-randomly between
// steps and loops: maybe prompt, step, sometimes compact, switch model or move. One line
// per event is written to `<dataDir>/events-<tag>.log` with a blocking write(2): once it
// returns the line is the kernel's, so the harness reads every event up to the kill. (Not
// stdout: a pipe whose reader falls behind makes Node queue writes in the process, and a
// kill drops them; trials then took a commit long done for the one in flight.) READY also
// goes to stdout, where the harness waits for it.
//   READY <session>         the host is open and the session exists
//   P <text>                a prompt was admitted (host.prompt resolved)
//   S <sha256>              a step replied; the hash of the Baseline it sent
//   C> <op> <revision>      a store commit begins (boundary, reply or summary)
//   C< <op> <revision>      that commit returned
// Anything unexpected is thrown: the process then exits on its own, which the harness
// reports as a failure.

import { openSync, writeSync } from "node:fs";
import { databaseOf } from "./databases.ts";
import { eventsFile, marks } from "./protocol.ts";
import { openScenario } from "./scenario.ts";

const [dataDir, seed, tag, ...rest] = process.argv.slice(2);
if (dataDir === undefined || seed === undefined || tag === undefined) {
  throw new Error("usage: worker.ts <dataDir> <seed> <tag> [<postgresUrl> <schema>]");
}

const events = openSync(eventsFile(dataDir, tag), "w");
const say = (line: string) => {
  writeSync(events, `${line}\n`);
};
const scenario = await openScenario({ dataDir, seed: Number(seed), tag, say, database: databaseOf(dataDir, rest) });
say(`${marks.ready} ${scenario.sessionId}`);
process.stdout.write(`${marks.ready} ${scenario.sessionId}\n`);
for (;;) await scenario.iterate();
