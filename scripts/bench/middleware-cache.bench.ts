// Bench `middleware-cache`, metric `extension-share-pct`: a BENCH_STEPS-step [200] AI SDK
// tool loop (`generateText`, `stopWhen: stepCountIs`) against a local Anthropic-shaped
// server, 20 core sources of which one changes after about a third of the tool calls
// (seeded). Value: the share of requests (after the first) whose body extends the previous
// one byte for byte (`extendsAnthropicPrefix`), with `contextMiddleware`. Baseline: the same
// agent re-rendering its system prompt from the current values at every step (a middleware
// that puts the freshly rendered Baseline first, no updates). Goal: 100 %.
//
// Environment: BENCH_STEPS, BENCH_QUICK=1 (40 steps).

import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createAnthropic } from "@ai-sdk/anthropic";
import { generateText, jsonSchema, type LanguageModelMiddleware, stepCountIs, tool, wrapLanguageModel } from "ai";
import { contextMiddleware } from "../../core/ai-sdk.ts";
import { extendsAnthropicPrefix } from "../../core/providers/prefix-extension.ts";
import * as SystemContext from "../../core/system-context.ts";
import { emit, envInt, seededRandom } from "./measure.ts";
import { anthropicServer, benchEngine, benchSources } from "./middleware-fixtures.ts";

const steps = envInt("BENCH_STEPS", process.env.BENCH_QUICK === "1" ? 40 : 200);
const dir = mkdtempSync(path.join(process.env.BENCH_TMPDIR || os.tmpdir(), "middleware-cache-"));

/** Runs the loop with the middleware `make` gives for the sources and returns the share of requests that extend the previous one. */
async function extensionShare(
  make: (sources: ReturnType<typeof benchSources>) => Promise<{ middleware: LanguageModelMiddleware; close(): Promise<void> }>,
): Promise<number> {
  const sources = benchSources(20);
  const server = await anthropicServer((index) => index < steps - 1);
  const { middleware, close } = await make(sources);
  try {
    const random = seededRandom(7);
    const anthropic = createAnthropic({ baseURL: `${server.url}/v1`, apiKey: "bench" });
    await generateText({
      model: wrapLanguageModel({ model: anthropic("claude-opus-4-8"), middleware }),
      system: "You are a careful agent.",
      prompt: "Work through the project.",
      tools: {
        read_file: tool({
          inputSchema: jsonSchema<{ path: string }>({ type: "object", properties: { path: { type: "string" } } }),
          execute: async ({ path: file }) => {
            if (random() < 0.3) sources.values[Math.floor(random() * sources.values.length)] = `changed ${random()}`;
            return `contents of ${file}`;
          },
        }),
      },
      stopWhen: stepCountIs(steps),
      providerOptions: { "context-host": { sessionId: "bench", location: dir } },
    });
    const bodies = server.bodies.map((body) => JSON.parse(body));
    const extending = bodies.slice(1).filter((body, i) => extendsAnthropicPrefix(bodies[i], body)).length;
    return (100 * extending) / (bodies.length - 1);
  } finally {
    await close();
    await server.close();
  }
}

try {
  const withEngine = await extensionShare(async (sources) => {
    const engine = await benchEngine(path.join(dir, "engine"), sources.core);
    return { middleware: contextMiddleware(engine) as LanguageModelMiddleware, close: () => engine.close() };
  });
  const reRendering = await extensionShare(async (sources) => ({
    middleware: {
      specificationVersion: "v4",
      async transformParams({ params }) {
        const { baseline } = await SystemContext.initialize(sources.context);
        return { ...params, prompt: [{ role: "system", content: baseline }, ...params.prompt] };
      },
    },
    close: async () => {},
  }));
  emit({ bench: "middleware-cache", metric: "extension-share-pct", value: withEngine, unit: "%", baseline: reRendering });
} finally {
  rmSync(dir, { recursive: true, force: true });
}
