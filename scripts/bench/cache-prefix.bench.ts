// Bench `cache-prefix`: the scripted session of scripted-session.ts — BENCH_STEPS
// boundaries [200] through `createHost` (real SQLite file, scripted provider) while six
// core Context Sources change every few steps (seeded): git status, open files, a todo
// list, the date, and rarely the project instructions. User prompts and replies vary in
// length; some replies call a tool (its result is the next boundary's input). All in one
// Context Epoch, unless BENCH_COMPACT=1 adds a compaction halfway (a second epoch; it
// also resets the naive host's history, which lowers its cost).
//
// Requests are compared as serialized text: JSON of `system`, then JSON of each message,
// one per line. A request "extends" the previous one when `system` is identical and the
// previous messages are a prefix of its messages.
//
// Metric `extension-share-pct`: share of in-epoch requests (all but the first of each
// epoch) that extend the previous request. Goal 100.
// Metric `uncached-bytes`: summed over all requests, the serialized bytes not covered by
// the longest common prefix with the previous request (the first request counts whole).
// Goal: ratio <= 0.05.
//
// Baseline of both, simulated in the same run over the same source value timeline and
// the same conversation: a naive host that re-renders the whole system prompt each turn
// from current values (`SystemContext.initialize` of the same sources at the same
// moment) and sends the history without Mid-Conversation System Messages.
//
// Environment (defaults in brackets; BENCH_QUICK=1 makes the defaults [40]): BENCH_STEPS,
// BENCH_SEED [1], BENCH_COMPACT [0], BENCH_TMPDIR where the temp data folder goes [the OS's].

import type { ProviderRequest } from "../../core/index.ts";
import { emit, envInt } from "./measure.ts";
import { runScriptedSession } from "./scripted-session.ts";

const bench = "cache-prefix";
const isQuick = process.env.BENCH_QUICK === "1";
const steps = envInt("BENCH_STEPS", isQuick ? 40 : 200);
const seed = envInt("BENCH_SEED", 1);
if (steps < 4) throw new RangeError("BENCH_STEPS must be at least 4");
const compactAt = envInt("BENCH_COMPACT", 0) === 1 ? Math.floor(steps / 2) : -1;

/** One request as the host sent it and as the naive host would have, with its epoch. */
interface Pair {
  readonly epoch: number;
  readonly host: ProviderRequest;
  readonly naive: ProviderRequest;
}

const session = await runScriptedSession({ steps, seed, compactAt, tmpDir: process.env.BENCH_TMPDIR });
const pairs: Pair[] = session.turns.map(({ epoch, request, currentBaseline }) => ({
  epoch,
  host: request,
  naive: {
    ...request,
    system: [session.systemPrompt, currentBaseline],
    messages: request.messages.filter((message) => message.role !== "system-update"),
  },
}));

// --- Metrics --------------------------------------------------------------------------------

const serializeParts = (request: ProviderRequest) => [
  JSON.stringify(request.system),
  ...request.messages.map((m) => JSON.stringify(m)),
];

function extendsPrevious(previous: ProviderRequest, current: ProviderRequest): boolean {
  const [prevSystem, ...prevMessages] = serializeParts(previous);
  const [system, ...messages] = serializeParts(current);
  return system === prevSystem && prevMessages.length <= messages.length && prevMessages.every((m, i) => m === messages[i]);
}

function commonPrefix(a: Buffer, b: Buffer): number {
  const length = Math.min(a.length, b.length);
  let i = 0;
  while (i < length && a[i] === b[i]) i++;
  return i;
}

function measure(side: "host" | "naive"): { share: number; uncached: number } {
  let inEpoch = 0;
  let extending = 0;
  let uncached = 0;
  let previousBytes = Buffer.alloc(0);
  pairs.forEach((pair, i) => {
    const request = pair[side];
    const bytes = Buffer.from(serializeParts(request).join("\n"), "utf8");
    uncached += bytes.length - commonPrefix(previousBytes, bytes);
    previousBytes = bytes;
    const previous = pairs[i - 1];
    if (previous !== undefined && previous.epoch === pair.epoch) {
      inEpoch += 1;
      if (extendsPrevious(previous[side], request)) extending += 1;
    }
  });
  return { share: (100 * extending) / inEpoch, uncached };
}

const host = measure("host");
const naive = measure("naive");
emit({ bench, metric: "extension-share-pct", value: host.share, unit: "%", baseline: naive.share });
emit({ bench, metric: "uncached-bytes", value: host.uncached, unit: "B", baseline: naive.uncached });
