// Bench `middleware-overhead`: what `contextMiddleware` and the context engine add to one
// `generateText` call of the AI SDK. 100 core sources, 3 of them changed before each call
// (so each call admits an update), the engine's sessions on SQLite; sessions of 20 turns
// whose history grows by a turn per call (a new session every 20 calls). Three calls to
// the same local server, measured interleaved in the same run:
// - with: the model wrapped with the middleware, naming the session;
// - by hand: the same call carrying the same Baseline and Mid-Conversation System Message
//   text, kept by the loop itself (what a loop without context-host would send): the
//   Baseline rendered at the session's first call, each turn's changed sources as a system
//   message after its user message, kept in the history;
// - bare: the call with neither (the caller's system prompt only).
//
// Metrics (medians of the calls): `added-ms`, with − by hand (baseline: by hand): what the
// middleware and the engine add; goal ≤ 1 ms. `added-ms-vs-bare`, with − bare (baseline:
// bare): that plus carrying the context's text through the SDK and HTTP, which any way of
// giving the model that context pays. Both are measured as a running agent runs, its garbage
// collected when V8 chooses (decision 204). `added-ms-forced-gc`: `added-ms` measured again
// in sessions of its own with a full collection forced before every call (how this bench
// measured until 2026-12-07), which slows every call and the middleware's most.
//
// Environment: BENCH_RUNS (calls measured each way, default 200), BENCH_QUICK=1 (30),
// BENCH_VERBOSE=1 (the request sizes of the last calls, to see that with and by hand send as much).

import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createAnthropic } from "@ai-sdk/anthropic";
import { generateText, type ModelMessage, wrapLanguageModel } from "ai";
import { contextMiddleware } from "../../core/ai-sdk.ts";
import { emit, envInt, seededRandom, timeMedians } from "./measure.ts";
import { anthropicServer, benchEngine, benchSources } from "./middleware-fixtures.ts";

const bench = "middleware-overhead";
const runs = envInt("BENCH_RUNS", process.env.BENCH_QUICK === "1" ? 30 : 200);
const dir = mkdtempSync(path.join(process.env.BENCH_TMPDIR || os.tmpdir(), "middleware-overhead-"));
const server = await anthropicServer(() => false);
const { values, core } = benchSources(100);
const keys = core.map((source) => source.key);
const engine = await benchEngine(dir, core);
const system = "You are a careful agent.";

/** A loop's own context keeping, without context-host: the text the engine would render, by hand. */
class HandWrittenContext {
  #seen: string[] = [];
  #baseline = "";

  /** A new session: the Baseline of the sources as they are now. */
  start(): void {
    this.#seen = [...values];
    this.#baseline = keys.map((key, i) => `${key}: ${values[i]}`).join("\n\n");
  }

  get baseline(): string {
    return this.#baseline;
  }

  /** The sources changed since the last call, as one update text; `undefined` when none did. */
  update(): string | undefined {
    const changed = keys.flatMap((key, i) => (values[i] === this.#seen[i] ? [] : [`${key} is now ${values[i]}`]));
    this.#seen = [...values];
    return changed.length === 0 ? undefined : changed.join("\n\n");
  }
}

try {
  const anthropic = createAnthropic({ baseURL: `${server.url}/v1`, apiKey: "bench" });
  const plain = anthropic("claude-opus-4-8");
  const wrapped = wrapLanguageModel({ model: plain, middleware: contextMiddleware(engine) });
  const random = seededRandom(1);
  const turns = 20;
  const histories = { with: [] as ModelMessage[], hand: [] as ModelMessage[], bare: [] as ModelMessage[] };
  const hand = new HandWrittenContext();
  let session = 0;
  /**
   * One call with the caller's system prompt and a new user message; `hand`: the hand-written
   * context's Baseline before the history, and its update (if any) after the user message,
   * where the middleware puts the one it admits.
   */
  const turn = async (
    history: ModelMessage[],
    model: typeof plain,
    options: object,
    hand?: { baseline: string; update: string | undefined },
  ) => {
    history.push({ role: "user", content: `Step ${history.length}.` });
    if (hand?.update !== undefined) history.push({ role: "system", content: hand.update });
    const lead: ModelMessage[] = hand === undefined ? [] : [{ role: "system", content: hand.baseline }];
    const result = await generateText({ model, system, messages: [...lead, ...history], ...options });
    history.push(...result.response.messages);
  };
  const providerOptions = () => ({ "context-host": { sessionId: `bench-${session}`, location: dir } });
  // Sessions continue across the two passes (`session` counts on): each pass measures calls in sessions of its own.
  let passOffset = 0;
  const measure = async (collect: boolean) => {
    const medians = (await timeMedians(
      [
        () => turn(histories.with, wrapped as typeof plain, { providerOptions: providerOptions() }),
        () => turn(histories.hand, plain, { allowSystemInMessages: true }, { baseline: hand.baseline, update: hand.update() }),
        () => turn(histories.bare, plain, {}),
      ],
      {
        runs,
        warmup: 5,
        collect,
        setup: (run) => {
          if (run % turns === 0) {
            session = passOffset + run / turns;
            for (const history of Object.values(histories)) history.length = 0;
            hand.start();
          }
          for (let i = 0; i < 3; i++) values[Math.floor(random() * values.length)] = `changed ${random()}`;
        },
      },
    )) as [number, number, number];
    passOffset += Math.ceil((runs + 5) / turns) + 1;
    return medians;
  };
  const [withMs, handMs, bareMs] = await measure(false);
  const [withForced, handForced] = await measure(true);
  if (process.env.BENCH_VERBOSE === "1") {
    const last = server.bodies.slice(-3).map((body) => body.length);
    process.stderr.write(`[${bench}] bytes of the last three requests (order varies): ${last.join(", ")}\n`);
  }
  emit({ bench, metric: "added-ms", value: withMs - handMs, unit: "ms", baseline: handMs });
  emit({ bench, metric: "added-ms-vs-bare", value: withMs - bareMs, unit: "ms", baseline: bareMs });
  emit({ bench, metric: "added-ms-forced-gc", value: withForced - handForced, unit: "ms", baseline: handForced });
} finally {
  await engine.close();
  await server.close();
  rmSync(dir, { recursive: true, force: true });
}
