// Bench `cost`: dollars per session. The scripted session of the `cache-prefix` bench
// (BENCH_STEPS boundaries [200], seeds 1..BENCH_RUNS [3], median printed) lowered to
// wire bodies for claude-opus-4-8, gpt-5 (implicit caching) and gpt-5.6 (explicit
// breakpoints), replayed through the product's cache model (`replayAnthropicCache`,
// `replayOpenAICache` in core/providers/cache-model.ts: each provider's published rules,
// and the reported rule that an entry on a trailing `role: "system"` message is never
// read), tokens counted with gpt-tokenizer (decision 020), priced with the pricing table.
//
// The same conversation over the same source value timeline, sent by:
// - this host: the Baseline fixed for the epoch, changes as Mid-Conversation System
//   Messages, breakpoints as lowering places them (decision 100);
// - (a) the naive host, baseline of `usd-per-session-*`: re-renders the whole system
//   prompt from current values each turn, no updates in history;
// - (b) "environment details appended to the latest user message", the pattern of many
//   coding agents, baseline of `usd-per-session-*-vs-env-details`;
// - (c) this host with one moving breakpoint on the last block of the last message (the
//   placement before decision 100), printed beside as `…-single-breakpoint`;
// - (d) the floor of a prefix cache for this conversation: each request reads what it
//   shares with the previous one, writes what the next one reuses, and pays the rest as
//   input, at no minimum and no lookback (`…-floor`).
// Goals: Opus ≤ 0.28 × (a), cache-hit-share ≥ 98 %; gpt-5.6 ≤ 0.35 × (a).
//
// Environment: BENCH_STEPS, BENCH_RUNS, BENCH_QUICK=1 (40 steps, 1 run).

import { encode } from "gpt-tokenizer";
import {
  type AnthropicMessagesBody,
  anthropicCapabilities,
  type CachedRequest,
  costOf,
  lowerAnthropic,
  lowerOpenAI,
  openAICapabilities,
  openAIModels,
  type ProviderRequest,
  priceOf,
  type RequestMessage,
  replayAnthropicCache,
  replayOpenAICache,
} from "../../core/providers/index.ts";
import { emit, envInt, median } from "./measure.ts";
import { runScriptedSession } from "./scripted-session.ts";

const bench = "cost";
const isQuick = process.env.BENCH_QUICK === "1";
const steps = envInt("BENCH_STEPS", isQuick ? 40 : 200);
const runs = envInt("BENCH_RUNS", isQuick ? 1 : 3);
const opus = "claude-opus-4-8";
const gpt5 = "gpt-5";
const gpt56 = "gpt-5.6";

const known = new Map<string, number>();
/** o200k_base tokens of a text (memoized: histories repeat). */
function countTokens(text: string): number {
  let tokens = known.get(text);
  if (tokens === undefined) {
    tokens = encode(text).length;
    known.set(text, tokens);
  }
  return tokens;
}

/** Appends the environment to the newest user-side message (user text or tool result). */
function withEnvironment(message: RequestMessage, environment: string): RequestMessage {
  const details = `\n\n<environment_details>\n${environment}\n</environment_details>`;
  if (message.role === "user") return { ...message, text: message.text + details };
  if (message.role === "tool") return { ...message, result: message.result + details };
  return message;
}

/** The body's messages without any breakpoint. */
function unmarked(body: AnthropicMessagesBody): AnthropicMessagesBody["messages"] {
  return body.messages.map((message) => ({
    ...message,
    content: message.content.map((block) => {
      const { cache_control: _mark, ...rest } = block as { cache_control?: unknown };
      return rest;
    }),
  })) as AnthropicMessagesBody["messages"];
}

/** The placement before decision 100: one breakpoint, on the last block that can hold one of the last message. */
function singleMovingBreakpoint(body: AnthropicMessagesBody): AnthropicMessagesBody {
  const messages = unmarked(body);
  const last = messages.at(-1)?.content as { type: string; cache_control?: unknown }[] | undefined;
  const holder = last?.findLast((block) => block.type !== "thinking" && block.type !== "redacted_thinking");
  if (holder !== undefined) holder.cache_control = { type: "ephemeral" };
  return { ...body, messages };
}

/** The text the cache model tokenizes for a block. */
function blockText(block: AnthropicMessagesBody["messages"][number]["content"][number]): string {
  if (block.type === "text") return block.text;
  if (block.type === "tool_result") return block.content;
  if (block.type === "tool_use") return JSON.stringify({ name: block.name, input: block.input });
  return JSON.stringify(block);
}

/**
 * The floor of a prefix cache for this conversation: each request reads from cache what it
 * shares with the previous request, writes what it shares with the next one and pays the
 * rest as plain input (no minimum length, no lookback, no lifetime).
 */
function floorCost(bodies: readonly AnthropicMessagesBody[], outputs: readonly number[]): number {
  const price = priceOf(opus)!.price;
  const units = bodies.map((body) => {
    return [
      ...(body.tools ?? []).map((tool) => ({ key: JSON.stringify(tool), tokens: countTokens(JSON.stringify(tool)) })),
      ...(body.system ?? []).map((block) => ({ key: block.text, tokens: countTokens(block.text) })),
      // Each message counted as the cache model counts its blocks.
      ...unmarked(body).map((message) => ({
        key: JSON.stringify(message),
        tokens: message.content.reduce((sum, block) => sum + countTokens(blockText(block)), 0),
      })),
    ];
  });
  const sharedTokens = (
    a: readonly { key: string; tokens: number }[],
    b: readonly { key: string; tokens: number }[] | undefined,
  ) => {
    let tokens = 0;
    for (let i = 0; b !== undefined && i < a.length && i < b.length && a[i]!.key === b[i]!.key; i++) tokens += a[i]!.tokens;
    return tokens;
  };
  return units.reduce((usd, request, r) => {
    const total = request.reduce((sum, unit) => sum + unit.tokens, 0);
    const read = sharedTokens(request, units[r - 1]);
    const kept = Math.max(read, sharedTokens(request, units[r + 1]));
    return usd + costOf({ input: total - kept, cacheRead: read, cacheWrite: kept - read, output: outputs[r] ?? 0 }, price);
  }, 0);
}

const sum = (replay: readonly CachedRequest[]) => replay.reduce((total, each) => total + (each.usd ?? 0), 0);

interface RunCosts {
  readonly usd: Record<string, number>;
  readonly hitShare: { readonly host: number; readonly single: number };
}

async function sessionCosts(seed: number): Promise<RunCosts> {
  const session = await runScriptedSession({ steps, seed });
  const sides: Record<"host" | "naive" | "envDetails", ProviderRequest[]> = { host: [], naive: [], envDetails: [] };
  const frozen: RequestMessage[] = []; // pattern (b): history as it was sent
  for (const { request, currentBaseline } of session.turns) {
    const conversation = request.messages.filter((message) => message.role !== "system-update");
    sides.host.push(request);
    sides.naive.push({ ...request, system: [session.systemPrompt, currentBaseline], messages: conversation });
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
    return reply?.role === "assistant" ? countTokens(reply.text + JSON.stringify(reply.toolCalls ?? [])) : 0;
  });
  const options = { countTokens, outputs };
  const anthropic = (side: ProviderRequest[]) =>
    side.map((r) => lowerAnthropic({ ...r, model: opus }, anthropicCapabilities(opus), { tools: session.tools }));
  const openAI = (side: ProviderRequest[], model: string) =>
    side.map((r) => lowerOpenAI({ ...r, model }, openAICapabilities(model, openAIModels), { tools: session.tools }));

  const usd: Record<string, number> = {};
  const hostBodies = anthropic(sides.host);
  const hostReplay = replayAnthropicCache(hostBodies, options);
  const singleReplay = replayAnthropicCache(hostBodies.map(singleMovingBreakpoint), options);
  usd[`${opus}/host`] = sum(hostReplay);
  usd[`${opus}/single`] = sum(singleReplay);
  usd[`${opus}/floor`] = floorCost(hostBodies, outputs);
  usd[`${opus}/naive`] = sum(replayAnthropicCache(anthropic(sides.naive), options));
  usd[`${opus}/envDetails`] = sum(replayAnthropicCache(anthropic(sides.envDetails), options));
  for (const model of [gpt5, gpt56]) {
    for (const side of ["host", "naive", "envDetails"] as const) {
      usd[`${model}/${side}`] = sum(replayOpenAICache(openAI(sides[side], model), options));
    }
  }
  const share = (replay: readonly CachedRequest[]) => {
    const read = replay.reduce((total, each) => total + each.usage.cacheRead, 0);
    const input = replay.reduce((total, each) => total + each.usage.cacheRead + each.usage.cacheWrite + each.usage.input, 0);
    return (100 * read) / input;
  };
  return { usd, hitShare: { host: share(hostReplay), single: share(singleReplay) } };
}

const perRun: RunCosts[] = [];
for (let seed = 1; seed <= runs; seed++) perRun.push(await sessionCosts(seed));
const medianOf = (key: string) => median(perRun.map((run) => run.usd[key] as number));

const naive = medianOf(`${opus}/naive`);
emit({ bench, metric: `usd-per-session-${opus}`, value: medianOf(`${opus}/host`), unit: "USD", baseline: naive });
emit({
  bench,
  metric: `usd-per-session-${opus}-single-breakpoint`,
  value: medianOf(`${opus}/single`),
  unit: "USD",
  baseline: naive,
});
emit({ bench, metric: `usd-per-session-${opus}-floor`, value: medianOf(`${opus}/floor`), unit: "USD", baseline: naive });
emit({
  bench,
  metric: `usd-per-session-${opus}-vs-env-details`,
  value: medianOf(`${opus}/host`),
  unit: "USD",
  baseline: medianOf(`${opus}/envDetails`),
});
emit({
  bench,
  metric: "cache-hit-share",
  value: median(perRun.map((run) => run.hitShare.host)),
  unit: "%",
  baseline: median(perRun.map((run) => run.hitShare.single)),
});
for (const model of [gpt5, gpt56]) {
  const host = medianOf(`${model}/host`);
  emit({ bench, metric: `usd-per-session-${model}`, value: host, unit: "USD", baseline: medianOf(`${model}/naive`) });
  emit({
    bench,
    metric: `usd-per-session-${model}-vs-env-details`,
    value: host,
    unit: "USD",
    baseline: medianOf(`${model}/envDetails`),
  });
}
