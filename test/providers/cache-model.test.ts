// The cache model against the providers' documented rules, on hand-written bodies (not on
// our own lowering's output): Anthropic's prompt-caching page (entries at breakpoints, a
// 20-block lookback, the minimum cacheable length, 5-minute and 1-hour lifetimes refreshed
// on use, the write and read multipliers), the reported rule that an entry on a trailing
// `role: "system"` message is never read, and OpenAI's (implicit caching from 1,024 tokens
// in 128-token steps; explicit breakpoints on gpt-5.6: at most four written, the latest 80
// considered, 30 minutes, writes at 1.25× input).

import { expect } from "chai";
import type { AnthropicMessagesBody, OpenAIChatBody } from "../../core/providers/index.ts";
import { explainPrefix, priceOf, replayAnthropicCache, replayCache, replayOpenAICache } from "../../core/providers/index.ts";

/** One token per word: counts are exact and easy to read. */
const words = (text: string) => (text === "" ? 0 : text.split(" ").length);
const text = (n: number, word: string) => Array.from({ length: n }, (_, i) => `${word}${i}`).join(" ");
const mark = { type: "ephemeral" } as const;
const minute = 60_000;

type Block = { type: "text"; text: string; cache_control?: { type: "ephemeral"; ttl?: "1h" } };
const block = (value: string, breakpoint?: "5m" | "1h"): Block => ({
  type: "text",
  text: value,
  ...(breakpoint === undefined ? {} : { cache_control: breakpoint === "1h" ? { type: "ephemeral", ttl: "1h" } : mark }),
});

function anthropic(
  system: Block[],
  messages: AnthropicMessagesBody["messages"],
  model = "claude-opus-4-8",
): AnthropicMessagesBody {
  return { model, max_tokens: 1024, system, messages };
}

const document = text(2000, "d"); // above every model's minimum

describe("cache model", () => {
  describe("Anthropic", () => {
    it("writes the prefix up to a breakpoint, and a later request with the same prefix reads it (the documented large-context example)", () => {
      const first = anthropic([block(document, "5m")], [{ role: "user", content: [block("what is it about")] }]);
      const second = anthropic([block(document, "5m")], [{ role: "user", content: [block("who wrote it")] }]);
      const [one, two] = replayAnthropicCache([first, second], { countTokens: words });
      expect(one!.usage).to.deep.equal({ input: 4, cacheRead: 0, cacheWrite: 2000, output: 0 });
      expect(two!.usage).to.deep.equal({ input: 3, cacheRead: 2000, cacheWrite: 0, output: 0 });
    });

    it("does not cache a prefix shorter than the model's minimum (1,024 tokens on Opus 4.8, 4,096 on Haiku 4.5)", () => {
      const short = anthropic([block(text(1000, "s"), "5m")], [{ role: "user", content: [block("q")] }]);
      const [one, two] = replayAnthropicCache([short, short], { countTokens: words });
      expect(one!.usage.cacheWrite).to.equal(0);
      expect(two!.usage.cacheRead).to.equal(0);
      const haiku = anthropic([block(text(3000, "h"), "5m")], [{ role: "user", content: [block("q")] }], "claude-haiku-4-5");
      expect(replayAnthropicCache([haiku, haiku], { countTokens: words })[1]!.usage.cacheRead).to.equal(0);
      const opus = anthropic([block(text(3000, "h"), "5m")], [{ role: "user", content: [block("q")] }]);
      expect(replayAnthropicCache([opus, opus], { countTokens: words })[1]!.usage.cacheRead).to.equal(3000);
    });

    it("looks back at most 20 blocks from a breakpoint for an earlier entry", () => {
      const turns = (n: number) => Array.from({ length: n }, (_, i) => block(`b${i}`));
      const first = anthropic([block(document, "5m")], [{ role: "user", content: [block("start", "5m")] }]);
      const within = anthropic(
        [block(document, "5m")],
        [{ role: "user", content: [block("start"), ...turns(19), block("end", "5m")] }],
      );
      const beyond = anthropic(
        [block(document, "5m")],
        [{ role: "user", content: [block("start"), ...turns(20), block("end", "5m")] }],
      );
      expect(replayAnthropicCache([first, within], { countTokens: words })[1]!.usage.cacheRead).to.equal(2001);
      const [, missed] = replayAnthropicCache([first, beyond], { countTokens: words });
      // Only the system breakpoint's entry is found; the one at "start" lies 21 blocks back.
      expect(missed!.usage.cacheRead).to.equal(2000);
      expect(missed!.miss).to.deep.equal({ reason: "beyond-lookback", tokens: 1 });
    });

    it("keeps a 5-minute entry while it is used (each read refreshes it) and drops it 5 minutes after the last use", () => {
      const body = anthropic([block(document, "5m")], [{ role: "user", content: [block("q")] }]);
      const at = [0, 4 * minute, 8 * minute, 14 * minute];
      const replay = replayAnthropicCache([body, body, body, body], { countTokens: words, at });
      expect(replay.map((each) => each.usage.cacheRead)).to.deep.equal([0, 2000, 2000, 0]);
      expect(replay[3]!.miss).to.deep.equal({ reason: "expired", tokens: 2000 });
      expect(replay[3]!.usage.cacheWrite).to.equal(2000);
    });

    it("keeps a 1-hour entry for an hour and reports its writes apart (ephemeral_1h_input_tokens)", () => {
      const body = anthropic([block(document, "1h")], [{ role: "user", content: [block("q", "5m")] }]);
      const [one, two] = replayAnthropicCache([body, body], { countTokens: words, at: [0, 30 * minute] });
      expect(one!.usage).to.deep.equal({ input: 0, cacheRead: 0, cacheWrite: 2001, cacheWrite1h: 2000, output: 0 });
      // The 5-minute entry at "q" expired; the 1-hour one at the document did not.
      expect(two!.usage).to.deep.equal({ input: 0, cacheRead: 2000, cacheWrite: 1, output: 0 });
    });

    it('never reads an entry written at a role: "system" message that ended its request, though the write is billed', () => {
      const history = [{ role: "user" as const, content: [block(text(20, "u"))] }];
      const first = anthropic([block(document, "5m")], [...history, { role: "system", content: [block("cwd: /b", "5m")] }]);
      const second = anthropic(
        [block(document, "5m")],
        [
          ...history,
          { role: "system", content: [block("cwd: /b")] },
          { role: "assistant", content: [block("ok")] },
          { role: "user", content: [block("next", "5m")] },
        ],
      );
      const [one, two] = replayAnthropicCache([first, second], { countTokens: words });
      expect(one!.usage.cacheWrite).to.equal(2022);
      expect(two!.usage.cacheRead).to.equal(2000);
      expect(two!.miss).to.deep.equal({ reason: "system-message-entry", tokens: 22 });
    });

    it("prices writes at 1.25× input (2× for 1 hour), reads at 0.1× and output at the row's price", () => {
      const body = anthropic([block(document, "5m")], [{ role: "user", content: [block("q")] }]);
      const price = priceOf("claude-opus-4-8")!.price;
      const [one, two] = replayAnthropicCache([body, body], { countTokens: words, outputs: [10, 0] });
      expect(one!.usd).to.be.closeTo((2000 * price.input * 1.25 + price.input + 10 * price.output) / 1e6, 1e-12);
      expect(two!.usd).to.be.closeTo((2000 * price.input * 0.1 + price.input) / 1e6, 1e-12);
    });
  });

  describe("OpenAI", () => {
    const chat = (messages: OpenAIChatBody["messages"], model = "gpt-5"): OpenAIChatBody => ({ model, messages });
    const explicit = (messages: OpenAIChatBody["messages"]): OpenAIChatBody => ({
      model: "gpt-5.6-terra",
      prompt_cache_options: { mode: "explicit" },
      messages,
    });
    const marked = (value: string) => [
      { type: "text" as const, text: value, prompt_cache_breakpoint: { mode: "explicit" as const } },
    ];

    it("implicit caching: nothing under 1,024 tokens; above, the shared prefix in 128-token steps, writes free", () => {
      const short = chat([
        { role: "developer", content: text(900, "x") },
        { role: "user", content: "q" },
      ]);
      expect(replayOpenAICache([short, short], { countTokens: words })[1]!.usage.cacheRead).to.equal(0);
      const long = chat([
        { role: "developer", content: text(1500, "y") },
        { role: "user", content: "q" },
      ]);
      const longer = chat([...long.messages, { role: "assistant", content: "a" }, { role: "user", content: "r" }]);
      const [, two] = replayOpenAICache([long, longer], { countTokens: words });
      expect(two!.usage).to.deep.equal({ input: 1503 - 1408, cacheRead: 1408, cacheWrite: 0, output: 0 });
    });

    it("explicit breakpoints: a request reads the longest live entry at one of its breakpoints and writes its new ones at 1.25×", () => {
      const first = explicit([
        { role: "developer", content: marked(text(1500, "b")) },
        { role: "user", content: marked("q one") },
      ]);
      const second = explicit([
        ...first.messages,
        { role: "assistant", content: "answer" },
        { role: "user", content: marked("q two") },
      ]);
      const price = priceOf("gpt-5.6-terra")!.price;
      const [one, two] = replayOpenAICache([first, second], { countTokens: words });
      expect(one!.usage).to.deep.equal({ input: 0, cacheRead: 0, cacheWrite: 1502, output: 0 });
      expect(two!.usage).to.deep.equal({ input: 0, cacheRead: 1502, cacheWrite: 3, output: 0 });
      expect(two!.usd).to.be.closeTo((1502 * price.input * 0.1 + 3 * price.input * 1.25) / 1e6, 1e-12);
      expect(price.cacheWrite5m).to.equal(price.input * 1.25);
    });

    it("explicit breakpoints: at most four written per request, and only the latest 80 considered for a read", () => {
      const turns = Array.from({ length: 6 }, (_, i) => ({ role: "user" as const, content: marked(text(300, `t${i}`)) }));
      const body = explicit(turns);
      const [one] = replayOpenAICache([body], { countTokens: words });
      // Six breakpoints from 1,200 tokens on; the first (300) and second (600) tokens are under the minimum, then four are written.
      expect(one!.usage).to.deep.equal({ input: 0, cacheRead: 0, cacheWrite: 1800, output: 0 });
      const many = Array.from({ length: 85 }, (_, i) => ({ role: "user" as const, content: marked(text(20, `m${i}`)) }));
      const base = explicit([{ role: "developer", content: marked(text(1100, "p")) }]);
      const later = explicit([...base.messages, ...many]);
      const [, two] = replayOpenAICache([base, later], { countTokens: words });
      // The entry at the developer message is the 86th breakpoint from the end: not considered.
      expect(two!.usage.cacheRead).to.equal(0);
      expect(two!.miss).to.deep.equal({ reason: "beyond-lookback", tokens: 1100 });
    });

    it("explicit breakpoints: an entry lives 30 minutes", () => {
      const body = explicit([
        { role: "developer", content: marked(text(1500, "b")) },
        { role: "user", content: "q" },
      ]);
      const replay = replayOpenAICache([body, body, body], { countTokens: words, at: [0, 29 * minute, 60 * minute] });
      expect(replay.map((each) => each.usage.cacheRead)).to.deep.equal([0, 1500, 0]);
      expect(replay[2]!.miss?.reason).to.equal("expired");
    });
  });

  it("replayCache lowers provider-neutral requests as the adapters do and replays them on the chosen model", () => {
    const system = ["You are careful.", text(2000, "c")];
    const requests = [
      { provider: "p", model: "m", system, messages: [{ role: "user" as const, text: "hi" }] },
      {
        provider: "p",
        model: "m",
        system,
        messages: [
          { role: "user" as const, text: "hi" },
          { role: "assistant" as const, text: "hello" },
          { role: "user" as const, text: "more" },
          { role: "system-update" as const, text: "cwd: /b" },
        ],
      },
    ];
    // "You are careful." and the Baseline: 2,003 tokens, "hi" one more.
    const [, two] = replayCache(requests, { api: "anthropic", model: "claude-opus-4-8", countTokens: words });
    expect(two!.usage).to.deep.equal({ input: 2, cacheRead: 2004, cacheWrite: 2, output: 0 });
    expect(two!.miss).to.equal(undefined);
    // OpenAI joins the two system parts into one message ("careful.\n\nc0" is one word here).
    const [, openAI] = replayCache(requests, { api: "openai", model: "gpt-5.6-terra", countTokens: words });
    expect(openAI!.usage).to.deep.equal({ input: 0, cacheRead: 2003, cacheWrite: 4, output: 0 });
  });

  it("explainPrefix tells what the next request reads and pays on a chosen model, and why a cached prefix went unread", () => {
    const system = ["You are careful.", text(2000, "c")];
    const previous = { provider: "p", model: "m", system, messages: [{ role: "user" as const, text: "hi" }] };
    const next = {
      ...previous,
      messages: [...previous.messages, { role: "assistant" as const, text: "hello" }, { role: "user" as const, text: "more" }],
    };
    const explained = explainPrefix(previous, next, { api: "anthropic", model: "claude-opus-4-8", countTokens: words });
    expect(explained.kind).to.equal("extends");
    expect(explained.cache!.usage).to.deep.equal({ input: 0, cacheRead: 2004, cacheWrite: 2, output: 0 });
    expect(explained.cache!.usd).to.be.a("number");
    expect(explainPrefix(previous, next)).to.not.have.property("cache");
    // Ten minutes later the 5-minute entries are gone.
    const late = explainPrefix(previous, next, {
      api: "anthropic",
      countTokens: words,
      model: "claude-opus-4-8",
      at: [0, 10 * minute],
    });
    expect(late.cache!.miss).to.deep.equal({ reason: "expired", tokens: 2004 });
  });
});
