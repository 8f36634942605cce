// The cache figures the dev terminal and the inspector show per request: the cache model
// on the session's model (claude-* by Anthropic's rules, gpt-* by OpenAI's), none for a
// model of neither (the scripted echo).

import { expect } from "chai";
import type { ProviderRequest } from "../../core/providers/index.ts";
import { cacheFigures } from "../../scripts/cli/cache-figures.ts";
import { DevModelStore } from "../../scripts/cli/dev/model.ts";

const system = ["You are careful.", "Project notes. ".repeat(600)];
const first: ProviderRequest = {
  provider: "anthropic",
  model: "claude-opus-4-8",
  system,
  messages: [{ role: "user", text: "hi" }],
};
const second: ProviderRequest = {
  ...first,
  messages: [...first.messages, { role: "assistant", text: "hello" }, { role: "user", text: "more" }],
};

describe("cache figures", () => {
  it("tell what a request reads, writes and pays on its model after the request before it", () => {
    const one = cacheFigures(undefined, first)!;
    expect(one).to.include({ model: "claude-opus-4-8", read: 0 });
    expect(one.written).to.be.above(1024);
    const two = cacheFigures(first, second)!;
    expect(two.read).to.equal(one.written);
    expect(two.usd).to.be.below(one.usd!);
    expect(cacheFigures(first, { ...second, model: "gpt-5.6-terra" })).to.include({ model: "gpt-5.6-terra" });
  });

  it("are left out for a model of no known API", () => {
    expect(cacheFigures(undefined, { ...first, model: "echo" })).to.equal(undefined);
  });

  it("come with each boundary of the dev model", () => {
    const model = new DevModelStore();
    model.putSession({ id: "s", location: "/w", provider: "anthropic", model: "claude-opus-4-8" });
    const boundary = (request: ProviderRequest) => ({
      request,
      epoch: { number: 1, reason: "initial" as const, baseline: system[1]!, snapshot: {} },
      admitted: [],
    });
    model.recordBoundary("s", boundary(first));
    const { request } = model.recordBoundary("s", boundary(second));
    expect(request.cache?.read).to.equal(cacheFigures(undefined, first)!.written);
  });
});
