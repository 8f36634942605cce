// One host process of the `two-hosts` bench: a host on the shared SQLite file steps the
// given sessions (in its own shuffled order, round after round, a prompt before every
// step) from the moment it reads `GO` on stdin until `durationMs` have passed. It prints
// `READY` once its host is open, then at the end one JSON line: the boundary key of every
// provider call it made, the id of every tool call it ran, its step outcomes and how
// long it stepped.
//
//   node --import tsx two-hosts-worker.ts <file> <idsJson> <durationMs> <seed> <leaseMs> <latencyMs>
//
// The provider answers after `latencyMs` (a model is never instant: this is the window
// in which the other process can step the same boundary). A reply asks for the `echo`
// tool for about a third of the boundaries (chosen by the boundary key, so both processes
// agree), with a call id derived from the key: a tool run twice for one call shows as a
// repeated id. The tool takes `latencyMs` too.

import { setTimeout as sleep } from "node:timers/promises";
import Type from "typebox";
import { createHost } from "../../core/index.ts";
import type { Provider } from "../../core/session/provider.ts";
import { SqliteSessionStore } from "../../core/session/store/sqlite.ts";
import * as SystemContext from "../../core/system-context.ts";
import { awaitGo } from "./barrier.ts";
import { boundaryKey } from "./boundary-key.ts";
import { seededRandom } from "./measure.ts";

const [file, idsJson, durationText, seedText, leaseText, latencyText] = process.argv.slice(2);
const ids = JSON.parse(idsJson as string) as string[];
const durationMs = Number(durationText);
const random = seededRandom(Number(seedText));
const latencyMs = Number(latencyText);

let tick = 0;
const context = SystemContext.make({
  key: "two-hosts/tick",
  schema: Type.Integer(),
  load: () => Math.floor(tick / 4),
  baseline: (n) => `Tick ${n}.`,
  update: (_p, n) => `Tick ${n} now.`,
});
const calls: string[] = [];
const toolRuns: string[] = [];
const provider: Provider = {
  async send(request) {
    const key = boundaryKey(request);
    calls.push(key);
    await sleep(latencyMs);
    const afterTool = request.messages.at(-1)?.role === "tool";
    if (!afterTool && Number.parseInt(key.slice(0, 2), 16) % 3 === 0) {
      return { text: `calling ${key}`, toolCalls: [{ id: `call-${key}`, name: "echo", input: { key } }] };
    }
    return { text: `ok ${key}` };
  },
};
const host = await createHost({
  store: new SqliteSessionStore(file as string),
  providers: { bench: provider },
  core: [{ key: "two-hosts/tick", load: () => context }],
  tools: {
    echo: async (input, call) => {
      toolRuns.push(`${call.sessionId} ${JSON.stringify(input)}`);
      await sleep(latencyMs); // a tool does some work too
      return "echoed";
    },
  },
  builtins: false,
  plugins: [],
  watch: false,
  leaseMs: Number(leaseText),
});

await awaitGo();

const outcomes: Record<string, number> = {};
const started = performance.now();
let n = 0;
while (performance.now() - started < durationMs) {
  const order = ids
    .map((id) => ({ id, r: random() }))
    .sort((a, b) => a.r - b.r)
    .map((x) => x.id);
  for (const id of order) {
    if (performance.now() - started >= durationMs) break;
    tick++;
    await host.prompt(id, `prompt ${seedText} ${++n}`);
    let kind: string;
    try {
      kind = (await host.step(id)).kind;
    } catch (error) {
      kind = error instanceof Error ? error.name : "thrown";
    }
    outcomes[kind] = (outcomes[kind] ?? 0) + 1;
  }
}
const ms = performance.now() - started;
await host.close();
process.stdout.write(`${JSON.stringify({ calls, toolRuns, outcomes, ms })}\n`);
