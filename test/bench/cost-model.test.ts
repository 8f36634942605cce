// The cost bench's billing model against the providers' published caching and pricing
// rules: Anthropic reads the longest earlier breakpoint prefix and writes the rest up to
// its last breakpoint; OpenAI caches prompts from 1,024 tokens in 128-token steps; the
// pricing table applies Anthropic's multipliers (write 1.25× / 2×, read 0.1×).

import { expect } from "chai";
import { costOf, priceOf, pricingTable } from "../../core/providers/pricing.ts";
import { anthropicUsage, openAIUsage, type Segment, tokensOf } from "../../scripts/bench/cost-model.ts";

const words = (n: number, word: string) => Array.from({ length: n }, (_, i) => `${word}${i}`).join(" ");
const block = (key: string, text: string, breakpoint?: "5m" | "1h"): Segment => ({
  key,
  text,
  ...(breakpoint === undefined ? {} : { breakpoint }),
});
const tokens = (text: string) => tokensOf(text).length;

describe("cost model", () => {
  const system = words(300, "s");
  const first = [block("sys", system, "5m"), block("u1", words(50, "u"), "5m")];
  const second = [
    block("sys", system, "5m"),
    block("u1", words(50, "u")),
    block("a1", words(20, "a")),
    block("u2", words(30, "v"), "5m"),
  ];

  it("Anthropic: a request extending the previous reads its whole prefix and writes only the new blocks", () => {
    const [one, two] = anthropicUsage([first, second], [5, 7]);
    expect(one).to.deep.equal({ input: 0, cacheRead: 0, cacheWrite: tokens(system) + tokens(words(50, "u")), output: 5 });
    expect(two!.cacheRead).to.equal(tokens(system) + tokens(words(50, "u")));
    expect(two!.cacheWrite).to.equal(tokens(words(20, "a")) + tokens(words(30, "v")));
  });

  it("Anthropic: a changed system block reads nothing, and 1-hour writes are reported apart", () => {
    const changed = [block("sys2", `${system} changed`, "1h"), ...second.slice(1)];
    const [, two] = anthropicUsage([first, changed], [0, 0]);
    expect(two!.cacheRead).to.equal(0);
    expect(two!.cacheWrite1h).to.equal(tokens(`${system} changed`));
  });

  it("OpenAI: nothing is cached below 1,024 tokens; above, the shared prefix in 128-token steps", () => {
    const short = [block("m", words(50, "x"))];
    expect(openAIUsage([short, short], [0, 0])[1]!.cacheRead).to.equal(0);
    const long = [block("m", words(900, "y"))];
    const longer = [...long, block("n", words(10, "z"))];
    const [, two] = openAIUsage([long, longer], [0, 0]);
    expect(two!.cacheRead % 128).to.equal(0);
    expect(two!.cacheRead).to.be.within(Math.max(1024, tokens(words(900, "y")) - 127), tokens(words(900, "y")));
    expect(two!.input + two!.cacheRead).to.equal(tokens(words(900, "y")) + tokens(words(10, "z")));
  });

  it("prices Anthropic cache writes at 1.25× (5 min) and 2× (1 h) input and reads at 0.1×, each row dated with a source", () => {
    const price = priceOf("claude-opus-4-8-20260528")!.price;
    const million = 1_000_000;
    expect(costOf({ input: 0, cacheRead: 0, cacheWrite: million, output: 0 }, price)).to.be.closeTo(1.25 * price.input, 1e-9);
    expect(costOf({ input: 0, cacheRead: 0, cacheWrite: million, cacheWrite1h: million, output: 0 }, price)).to.be.closeTo(
      2 * price.input,
      1e-9,
    );
    expect(costOf({ input: 0, cacheRead: million, cacheWrite: 0, output: 0 }, price)).to.be.closeTo(0.1 * price.input, 1e-9);
    expect(priceOf("gpt-5-mini")!.price.input).to.be.below(priceOf("gpt-5")!.price.input);
    for (const row of pricingTable) {
      expect(row.source).to.match(/^https:\/\//);
      expect(row.date).to.match(/^\d{4}-\d{2}-\d{2}$/);
    }
  });
});
