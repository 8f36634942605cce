// Bench `cache-prefix`: a scripted session of BENCH_STEPS boundaries [200] through
// `createHost` (real SQLite file, scripted provider) while six core Context Sources change
// every few steps (seeded): git status, open files, a todo list, the date, and rarely
// the project instructions. User prompts and replies vary in length; some replies call
// a tool (its result is the next boundary's input). All in one Context Epoch, unless
// BENCH_COMPACT=1 adds a compaction halfway (a second epoch; it also resets the naive
// host's history, which lowers its cost).
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

import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import Type from "typebox";
import {
  type CoreSource,
  createHost,
  type ProviderReply,
  type ProviderRequest,
  SystemContext,
  scriptedProvider,
} from "../../core/index.ts";
import { emit, envInt } from "./measure.ts";

const bench = "cache-prefix";
const isQuick = process.env.BENCH_QUICK === "1";
const steps = envInt("BENCH_STEPS", isQuick ? 40 : 200);
const seed = envInt("BENCH_SEED", 1);
if (steps < 4) throw new RangeError("BENCH_STEPS must be at least 4");
const compactAt = envInt("BENCH_COMPACT", 0) === 1 ? Math.floor(steps / 2) : -1;

/** mulberry32: a small seeded generator, so every run sees the same timeline. */
function random(state: number): () => number {
  let a = state >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const rng = random(seed);
const pick = <T>(items: readonly T[]): T => items[Math.floor(rng() * items.length)] as T;
const words = "the of a to in file test build fix type error module session context source update cache plugin".split(" ");
const sentence = (min: number, max: number) =>
  Array.from({ length: min + Math.floor(rng() * (max - min)) }, () => pick(words)).join(" ");

// --- The environment the sources observe, changed between steps ---------------------------

const files = Array.from({ length: 40 }, (_, i) => `src/${pick(["core", "lib", "app"])}/${pick(words)}-${i}.ts`);
const env = {
  date: 1,
  branch: "main",
  modified: [] as string[],
  open: [files[0] as string],
  todo: ["read the issue", "write the failing test"],
  instructions: `# AGENTS.md\n\n${Array.from({ length: 40 }, () => `- ${sentence(6, 14)}.`).join("\n")}`,
};

function change(step: number): void {
  if (step % 25 === 24) env.date += 1;
  if (rng() < 0.25) env.modified = [...new Set([...env.modified, pick(files)])].slice(-8);
  if (rng() < 0.05) env.branch = `feature/${pick(words)}-${step}`;
  if (rng() < 0.15) env.open = [...new Set([...env.open, pick(files)])].slice(-5);
  if (rng() < 0.1) env.todo = rng() < 0.5 ? env.todo.slice(1) : [...env.todo, sentence(3, 7)].slice(-6);
  if (rng() < 0.01) env.instructions += `\n- ${sentence(6, 14)}.`;
}

const Strings = Type.Array(Type.String());
const sources = [
  SystemContext.make({
    key: "core/environment",
    schema: Type.Object({ cwd: Type.String(), platform: Type.String() }),
    load: () => ({ cwd: "/work/app", platform: "linux" }),
    baseline: (v) => `<env>\nWorking directory: ${v.cwd}\nPlatform: ${v.platform}\n</env>`,
    update: (_p, v) => `The working directory is now ${v.cwd} on ${v.platform}.`,
  }),
  SystemContext.make({
    key: "core/instructions",
    schema: Type.String(),
    load: () => env.instructions,
    baseline: (v) => `Instructions from AGENTS.md:\n${v}`,
    update: (_p, v) => `AGENTS.md changed; its complete current contents:\n${v}`,
    removed: () => "AGENTS.md no longer applies.",
  }),
  SystemContext.make({
    key: "core/date",
    schema: Type.Integer(),
    load: () => env.date,
    baseline: (v) => `Today's date: 2026-03-${String(v).padStart(2, "0")}`,
    update: (_p, v) => `The date is now 2026-03-${String(v).padStart(2, "0")}.`,
  }),
  SystemContext.make({
    key: "core/git",
    schema: Type.Object({ branch: Type.String(), modified: Strings }),
    load: () => ({ branch: env.branch, modified: env.modified }),
    baseline: (v) => `Git branch: ${v.branch}\nModified files: ${v.modified.join(", ") || "none"}`,
    update: (_p, v) => `Git status now: branch ${v.branch}; modified: ${v.modified.join(", ") || "none"}.`,
  }),
  SystemContext.make({
    key: "core/open-files",
    schema: Strings,
    load: () => env.open,
    baseline: (v) => `Open in the editor: ${v.join(", ")}`,
    update: (_p, v) => `Now open in the editor: ${v.join(", ")}.`,
  }),
  SystemContext.make({
    key: "core/todo",
    schema: Strings,
    load: () => env.todo,
    baseline: (v) => `Todo:\n${v.map((item) => `- [ ] ${item}`).join("\n")}`,
    update: (_p, v) => `The todo list is now:\n${v.map((item) => `- [ ] ${item}`).join("\n")}`,
  }),
];
const core: CoreSource[] = sources.map((context, i) => ({ key: `core/source${i}`, load: () => context }));
const composed = SystemContext.combine(sources);

const systemPrompt = `You are a careful coding agent working in the user's repository.\n${Array.from(
  { length: 12 },
  () => `${sentence(10, 20)}.`,
).join("\n")}`;

// --- The session ----------------------------------------------------------------------------

let calls = 0;
const reply = (request: ProviderRequest): ProviderReply => {
  const text = sentence(20, 160);
  if (request.messages.at(-1)?.role !== "tool" && rng() < 0.2) {
    calls += 1;
    return { text, toolCalls: [{ id: `call-${calls}`, name: "read_file", input: { path: pick(files) } }] };
  }
  return { text };
};
const provider = scriptedProvider(Array.from({ length: steps * 2 + 10 }, () => reply));

const dataDir = mkdtempSync(path.join(process.env.BENCH_TMPDIR || os.tmpdir(), "context-host-bench-cache-prefix-"));
const cleanUp = () => rmSync(dataDir, { recursive: true, force: true });
process.once("SIGTERM", () => {
  cleanUp();
  process.exit(143);
});

/** One request as the host sent it and as the naive host would have, with its epoch. */
interface Pair {
  readonly epoch: number;
  readonly host: ProviderRequest;
  readonly naive: ProviderRequest;
}

const pairs: Pair[] = [];
try {
  const host = await createHost({
    dataDir,
    providers: { scripted: provider },
    systemPrompt,
    core,
    builtins: false,
    plugins: [],
    watch: false,
    tools: { read_file: (input) => `contents of ${(input as { path: string }).path}:\n${sentence(30, 120)}` },
  });
  const id = await host.createSession({ location: "/work/app", provider: "scripted", model: "bench" });
  let epoch = 0;
  let toolTurn = false;
  for (let step = 0; step < steps; step++) {
    if (step === compactAt) {
      await host.compact(id);
      epoch += 1;
    }
    if (step > 0) change(step);
    if (!toolTurn) await host.prompt(id, sentence(8, 60));
    // The naive host renders everything from the values current at this boundary.
    const naiveSystem = (await SystemContext.initialize(composed)).baseline;
    const result = await host.step(id);
    if (result.kind !== "replied") throw new Error(`step ${step}: expected a reply, got ${result.kind}`);
    toolTurn = (result.reply.toolCalls ?? []).length > 0;
    const naive: ProviderRequest = {
      ...result.request,
      system: [systemPrompt, naiveSystem],
      messages: result.request.messages.filter((message) => message.role !== "system-update"),
    };
    pairs.push({ epoch, host: result.request, naive });
  }
  await host.close();
} finally {
  cleanUp();
}

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
