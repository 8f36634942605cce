// Bench `cost`: dollars per session. The scripted session of the `cache-prefix` bench
// (BENCH_STEPS boundaries [200], seeds 1..BENCH_RUNS [3], median printed) lowered to
// wire bodies for one Anthropic model (claude-opus-4-8) and one OpenAI model (gpt-5),
// tokens counted with gpt-tokenizer, cache hits simulated from each API's rules
// (cost-model.ts), priced with the pricing table (core/providers/pricing.ts).
//
// Three hosts send the same conversation over the same source value timeline:
// - this host: the Baseline fixed for the epoch, changes as Mid-Conversation System
//   Messages;
// - (a) the naive host, baseline of `usd-per-session-*`: re-renders the whole system
//   prompt from current values each turn, no updates in history;
// - (b) "environment details appended to the latest user message", the pattern of many
//   coding agents, baseline of `usd-per-session-*-vs-env-details`: a static system
//   prompt, and the full current environment (the same rendered sources) appended to the
//   newest user-side message of each request, kept in history as sent.
// Goal: ratio ≤ 0.25 against (a).
//
// Environment: BENCH_STEPS, BENCH_RUNS, BENCH_QUICK=1 (40 steps, 1 run).

import {
  anthropicCapabilities,
  lowerAnthropic,
  lowerOpenAI,
  openAICapabilities,
  openAIModels,
  type ProviderRequest,
  type RequestMessage,
} from "../../core/providers/index.ts";
import { costOf, priceOf } from "../../core/providers/pricing.ts";
import { anthropicSegments, anthropicUsage, openAISegments, openAIUsage, tokensOf } from "./cost-model.ts";
import { emit, envInt, median } from "./measure.ts";
import { runScriptedSession } from "./scripted-session.ts";

const bench = "cost";
const isQuick = process.env.BENCH_QUICK === "1";
const steps = envInt("BENCH_STEPS", isQuick ? 40 : 200);
const runs = envInt("BENCH_RUNS", isQuick ? 1 : 3);
const models = { anthropic: "claude-opus-4-8", openai: "gpt-5" } as const;

type Side = "host" | "naive" | "envDetails";

/** Appends the environment to the newest user-side message (user text or tool result). */
function withEnvironment(message: RequestMessage, environment: string): RequestMessage {
  const details = `\n\n<environment_details>\n${environment}\n</environment_details>`;
  if (message.role === "user") return { ...message, text: message.text + details };
  if (message.role === "tool") return { ...message, result: message.result + details };
  return message;
}

async function sessionCosts(seed: number): Promise<Record<string, Record<Side, number>>> {
  const session = await runScriptedSession({ steps, seed });
  const sides: Record<Side, ProviderRequest[]> = { host: [], naive: [], envDetails: [] };
  const frozen: RequestMessage[] = []; // pattern (b): history as it was sent
  for (const { request, currentBaseline } of session.turns) {
    const conversation = request.messages.filter((message) => message.role !== "system-update");
    sides.host.push(request);
    sides.naive.push({ ...request, system: [session.systemPrompt, currentBaseline] });
    sides.naive[sides.naive.length - 1] = { ...sides.naive.at(-1)!, messages: conversation };
    const added = conversation.slice(frozen.length);
    added.forEach((message, i) => {
      frozen.push(i === added.length - 1 ? withEnvironment(message, currentBaseline) : message);
    });
    sides.envDetails.push({ ...request, system: [session.systemPrompt], messages: [...frozen] });
  }
  // Output: each reply's tokens, read from the next request's assistant message (the last reply's from a typical one).
  const outputs = session.turns.map((turn, i) => {
    const next = session.turns[i + 1]?.request.messages ?? turn.request.messages;
    const reply = [...next].reverse().find((message) => message.role === "assistant");
    return reply?.role === "assistant" ? tokensOf(reply.text + JSON.stringify(reply.toolCalls ?? [])).length : 0;
  });

  const costs: Record<string, Record<Side, number>> = {};
  const anthropicPrice = priceOf(models.anthropic)!.price;
  const openAIPrice = priceOf(models.openai)!.price;
  const anthropic = anthropicCapabilities(models.anthropic);
  const openAI = openAICapabilities(models.openai, openAIModels);
  costs[models.anthropic] = { host: 0, naive: 0, envDetails: 0 };
  costs[models.openai] = { host: 0, naive: 0, envDetails: 0 };
  for (const side of ["host", "naive", "envDetails"] as const) {
    const anthropicBodies = sides[side].map((r) =>
      anthropicSegments(lowerAnthropic({ ...r, model: models.anthropic }, anthropic, { tools: session.tools })),
    );
    const openAIBodies = sides[side].map((r) =>
      openAISegments(lowerOpenAI({ ...r, model: models.openai }, openAI, { tools: session.tools })),
    );
    costs[models.anthropic]![side] = anthropicUsage(anthropicBodies, outputs).reduce(
      (sum, u) => sum + costOf(u, anthropicPrice),
      0,
    );
    costs[models.openai]![side] = openAIUsage(openAIBodies, outputs).reduce((sum, u) => sum + costOf(u, openAIPrice), 0);
  }
  return costs;
}

const perRun: Record<string, Record<Side, number>>[] = [];
for (let seed = 1; seed <= runs; seed++) perRun.push(await sessionCosts(seed));

for (const model of [models.anthropic, models.openai]) {
  const medianOf = (side: Side) => median(perRun.map((run) => run[model]![side]));
  const host = medianOf("host");
  emit({ bench, metric: `usd-per-session-${model}`, value: host, unit: "USD", baseline: medianOf("naive") });
  emit({ bench, metric: `usd-per-session-${model}-vs-env-details`, value: host, unit: "USD", baseline: medianOf("envDetails") });
}
