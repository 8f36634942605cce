// Bench `middleware-overhead`, metric `added-ms`: what `contextMiddleware` adds to one
// `generateText` call of the AI SDK: 100 core sources, 3 of them changed before each call
// (so each call admits an update), the engine's sessions on SQLite; sessions of 20 turns
// whose history grows by a turn per call (a new session every 20 calls); against the same
// call without the middleware to the same local server, measured interleaved in the same
// run. Value: median with − median without; baseline: median without. Goal: ≤ 1 ms.
//
// Environment: BENCH_RUNS (calls measured each way, default 200), BENCH_QUICK=1 (30).

import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createAnthropic } from "@ai-sdk/anthropic";
import { generateText, type ModelMessage, wrapLanguageModel } from "ai";
import { contextMiddleware } from "../../core/ai-sdk.ts";
import { emit, envInt, seededRandom, timeMedians } from "./measure.ts";
import { anthropicServer, benchEngine, benchSources } from "./middleware-fixtures.ts";

const runs = envInt("BENCH_RUNS", process.env.BENCH_QUICK === "1" ? 30 : 200);
const dir = mkdtempSync(path.join(process.env.BENCH_TMPDIR || os.tmpdir(), "middleware-overhead-"));
const server = await anthropicServer(() => false);
const { values, core } = benchSources(100);
const engine = await benchEngine(dir, core);
try {
  const anthropic = createAnthropic({ baseURL: `${server.url}/v1`, apiKey: "bench" });
  const plain = anthropic("claude-opus-4-8");
  const wrapped = wrapLanguageModel({ model: plain, middleware: contextMiddleware(engine) });
  const random = seededRandom(1);
  const turns = 20;
  const withHistory: ModelMessage[] = [];
  const withoutHistory: ModelMessage[] = [];
  let session = 0;
  const turn = async (history: ModelMessage[], model: typeof plain, options: object) => {
    history.push({ role: "user", content: `Step ${history.length}.` });
    const result = await generateText({ model, system: "You are a careful agent.", messages: history, ...options });
    history.push(...result.response.messages);
  };
  const providerOptions = () => ({ "context-host": { sessionId: `bench-${session}`, location: dir } });
  const [withMs, withoutMs] = await timeMedians(
    [
      () => turn(withHistory, wrapped as typeof plain, { providerOptions: providerOptions() }),
      () => turn(withoutHistory, plain, {}),
    ],
    {
      runs,
      warmup: 5,
      setup: (run) => {
        if (run % turns === 0) {
          session = run / turns;
          withHistory.length = 0;
          withoutHistory.length = 0;
        }
        for (let i = 0; i < 3; i++) values[Math.floor(random() * values.length)] = `changed ${random()}`;
      },
    },
  );
  emit({
    bench: "middleware-overhead",
    metric: "added-ms",
    value: (withMs as number) - (withoutMs as number),
    unit: "ms",
    baseline: withoutMs as number,
  });
} finally {
  await engine.close();
  await server.close();
  rmSync(dir, { recursive: true, force: true });
}
