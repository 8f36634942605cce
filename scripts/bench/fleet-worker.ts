// One host process of the `fleet` bench: steps the sessions it is given (in its own
// shuffled order, so processes contend for the same sessions), a prompt and a step each
// time as an agent's loop does, until each has STEPS replies (from the moment the bench
// says GO: barrier.ts), then prints `{ calls, ms }` as one JSON line on stdout: `calls`
// holds the boundary key of every provider call it made (see boundary-key.ts). Latencies of
// every step it ran go to the line too, for p50/p99, and the CPU time it used.
// Before READY it warms up (BENCH_WARM_UP [200] steps on sessions of its own, not counted):
// what is measured is a host running hot, as a long-running fleet host is, not four
// processes each compiling the same code at the start of a short run.

import Type from "typebox";
import { createHost } from "../../core/index.ts";
import type { Provider } from "../../core/session/provider.ts";
import { PostgresSessionStore } from "../../core/session/store/postgres.ts";
import { SqliteSessionStore } from "../../core/session/store/sqlite.ts";
import * as SystemContext from "../../core/system-context.ts";
import { awaitGo } from "./barrier.ts";
import { boundaryKey } from "./boundary-key.ts";
import { seededRandom } from "./measure.ts";

const [kind, where, idsJson, stepsText, seedText] = process.argv.slice(2);
const ids = JSON.parse(idsJson as string) as string[];
const steps = Number(stepsText);
const random = seededRandom(Number(seedText));

let tick = 0;
const context = SystemContext.make({
  key: "fleet/tick",
  schema: Type.Integer(),
  load: () => Math.floor(tick / 3),
  baseline: (n) => `Tick ${n}.`,
  update: (_p, n) => `Tick ${n} now.`,
});
const calls: string[] = [];
const provider: Provider = {
  async send(request) {
    calls.push(boundaryKey(request));
    return { text: "ok" };
  },
};
const store =
  kind === "postgres"
    ? await PostgresSessionStore.open({
        connectionString: (where as string).split("#")[0] as string,
        schema: (where as string).split("#")[1] ?? "fleet",
        poolSize: 4,
      })
    : new SqliteSessionStore(where as string);
const host = await createHost({
  store,
  providers: { fleet: provider },
  core: [{ key: "fleet/tick", load: () => context }],
  builtins: false,
  plugins: [],
  watch: false,
});
const order = ids
  .map((id) => ({ id, r: random() }))
  .sort((a, b) => a.r - b.r)
  .map((x) => x.id);
const latencies: number[] = [];
let errors = 0;
// Replies each session had at this host's last step: a step's request carries the session's
// history, so the loop learns how far a session is (other hosts' steps included) without
// reading it back; a session is done once a step of this host saw STEPS replies.
const replies = new Map<string, number>();
const warmUp = Number(process.env.BENCH_WARM_UP ?? 200);
for (let done = 0; done < warmUp; ) {
  const id = `warm-up-${seedText}-${done}`;
  // Through the store, as the bench seeds its sessions: "/fleet" is no folder of this machine.
  await store.createSession({ id, location: "/fleet", provider: "fleet", model: "m" });
  for (let step = 0; step < 10 && done < warmUp; step++, done++) {
    tick++;
    await host.prompt(id, "warm up");
    await host.step(id);
  }
}
calls.length = 0;
await awaitGo();
const started = performance.now();
const cpuAtGo = process.cpuUsage();
for (let open = order; open.length > 0; ) {
  const next: string[] = [];
  for (const id of open) {
    const before = replies.get(id) ?? 0;
    if (before >= steps) continue;
    next.push(id);
    tick++;
    await host.prompt(id, `step ${before + 1}`);
    const t = performance.now();
    try {
      const result = await host.step(id);
      if (result.kind === "replied") {
        replies.set(id, result.request.messages.filter((m) => m.role === "assistant").length + 1);
      }
    } catch {
      // A conflict another host won: the session is stepped again on the next round.
      errors++;
    }
    latencies.push(performance.now() - t);
  }
  open = next;
}
const ms = performance.now() - started;
const cpu = process.cpuUsage(cpuAtGo);
const cpuMs = (cpu.user + cpu.system) / 1000;
await host.close();
process.stdout.write(`${JSON.stringify({ calls, ms, latencies, errors, cpuMs })}\n`);
