// `context-host inspect`: a session's stored replies with their token usage, the totals,
// and their price from the pricing table.

import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { expect } from "chai";
import Type from "typebox";
import { scriptedProvider } from "../../core/index.ts";
import { costOf, priceOf } from "../../core/providers/pricing.ts";
import * as SystemContext from "../../core/system-context.ts";
import { main } from "../../scripts/cli/main.ts";
import { openHost } from "../session/fixtures.ts";

describe("context-host inspect", () => {
  let dir = "";
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "inspect-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("prints each reply's usage, the totals and their cost at the model's price", async () => {
    const usages = [
      { input: 3, cacheRead: 0, cacheWrite: 1200, output: 40 },
      { input: 5, cacheRead: 1200, cacheWrite: 60, output: 25 },
    ];
    const provider = scriptedProvider(usages.map((usage, i) => ({ text: `reply ${i}`, usage })));
    const host = await openHost(dir, { core: [], providers: { scripted: provider } });
    const id = await host.createSession({ location: dir, provider: "scripted", model: "claude-opus-4-8" });
    for (const text of ["one", "two"]) {
      await host.prompt(id, text);
      await host.step(id);
    }
    expect((await host.messages(id)).filter((m) => m.role === "assistant").map((m) => m.usage)).to.deep.equal(usages);
    await host.close();

    const out: string[] = [];
    const code = await main(["inspect", id, "--data", dir, "--json"], { cwd: dir, out: (t) => out.push(t), err: () => {} });
    expect(code).to.equal(0);
    const printed = JSON.parse(out.join("\n")) as { total: object; usd: number };
    const total = { input: 8, cacheRead: 1200, cacheWrite: 1260, output: 65 };
    expect(printed.total).to.deep.equal(total);
    expect(printed.usd).to.be.closeTo(costOf(total, priceOf("claude-opus-4-8")!.price), 1e-12);

    const text: string[] = [];
    expect(await main(["inspect", id, "--data", dir], { cwd: dir, out: (t) => text.push(t), err: () => {} })).to.equal(0);
    expect(text.join("\n")).to.include("cache read 1200, cache write 60, out 25").and.include("total: in 8");
  });

  it("--model replays the active epoch's requests through the cache model on that model, with each request's cost", async () => {
    const provider = scriptedProvider([{ text: "reply 0" }, { text: "reply 1" }, { text: "reply 2" }]);
    const systemPrompt = `You are a test agent. ${"Follow the project's conventions. ".repeat(200)}`;
    const host = await openHost(dir, { core: [], providers: { scripted: provider }, systemPrompt });
    const id = await host.createSession({ location: dir, provider: "scripted", model: "claude-opus-4-8" });
    for (const text of ["one", "two", "three"]) {
      await host.prompt(id, text);
      await host.step(id);
    }
    await host.close();
    for (const model of ["claude-opus-4-8", "gpt-5.6-terra"]) {
      const out: string[] = [];
      const args = ["inspect", id, "--data", dir, "--model", model, "--json"];
      expect(await main(args, { cwd: dir, out: (t) => out.push(t), err: () => {} })).to.equal(0);
      const printed = JSON.parse(out.join("\n")) as {
        cache: { model: string; requests: { usage: { cacheRead: number; cacheWrite: number }; usd: number }[] };
      };
      expect(printed.cache.model).to.equal(model);
      const [first, second, third] = printed.cache.requests;
      expect(printed.cache.requests).to.have.length(3);
      expect(first!.usage.cacheRead, model).to.equal(0);
      expect(first!.usage.cacheWrite, model).to.be.above(1024);
      // Each later request reads what the one before it wrote: the system prompt and more.
      expect(second!.usage.cacheRead, model).to.equal(first!.usage.cacheWrite);
      expect(third!.usage.cacheRead, model).to.equal(first!.usage.cacheWrite + second!.usage.cacheWrite);
      expect(second!.usd, model).to.be.below(first!.usd);
    }
    const text: string[] = [];
    const args = ["inspect", id, "--data", dir, "--model", "claude-opus-4-8"];
    expect(await main(args, { cwd: dir, out: (t) => text.push(t), err: () => {} })).to.equal(0);
    expect(text.join("\n"))
      .to.include("the active epoch's requests on claude-opus-4-8")
      .and.match(/request 3: cache read \d+/);
  });

  it("--list lists the stored sessions oldest first, with provider, model, location and message count", async () => {
    const host = await openHost(dir, { core: [], providers: { scripted: scriptedProvider() } });
    const first = await host.createSession({ location: dir, provider: "scripted", model: "m1" });
    await host.prompt(first, "hello");
    await host.step(first);
    mkdirSync(path.join(dir, "b"));
    const second = await host.createSession({ location: path.join(dir, "b"), provider: "scripted", model: "m2" });
    await host.close();
    const out: string[] = [];
    expect(
      await main(["inspect", "--list", "--data", dir, "--json"], { cwd: dir, out: (t) => out.push(t), err: () => {} }),
    ).to.equal(0);
    expect(JSON.parse(out.join("\n"))).to.deep.equal({
      sessions: [
        { id: first, provider: "scripted", model: "m1", location: dir, messages: 2 },
        { id: second, provider: "scripted", model: "m2", location: path.join(dir, "b"), messages: 0 },
      ],
    });
    const text: string[] = [];
    expect(await main(["inspect", "--list", "--data", dir], { cwd: dir, out: (t) => text.push(t), err: () => {} })).to.equal(0);
    expect(text).to.deep.equal([
      `${first}  scripted/m1  ${dir}  2 message(s)`,
      `${second}  scripted/m2  ${path.join(dir, "b")}  0 message(s)`,
    ]);
    expect(await main(["inspect", "--list", first, "--data", dir], { cwd: dir, out: () => {}, err: () => {} })).to.equal(64);
  });

  it("exits 64 without a session id and 1 without a sessions file", async () => {
    const quiet = { cwd: dir, out: () => {}, err: () => {} };
    expect(await main(["inspect"], quiet)).to.equal(64);
    expect(await main(["inspect", "x", "--data", path.join(dir, "none")], quiet)).to.equal(1);
  });

  it("shows the active epoch's reason, Baseline and snapshot, and the Mid-Conversation System Messages, from a named sessions file", async () => {
    let branch = "main";
    const source = {
      key: "core/branch",
      load: () =>
        SystemContext.make({
          key: "core/branch",
          schema: Type.String(),
          load: () => branch,
          baseline: (b: string) => `branch ${b}`,
          update: (_p: string, b: string) => `branch is now ${b}`,
        }),
    };
    const host = await openHost(dir, { core: [source], providers: { scripted: scriptedProvider() } });
    const id = await host.createSession({ location: dir, provider: "scripted", model: "m" });
    await host.prompt(id, "one");
    await host.step(id);
    branch = "feature";
    await host.prompt(id, "two");
    await host.step(id);
    await host.close();

    const db = path.join(dir, "sessions.db");
    for (const args of [
      ["inspect", db, id],
      ["inspect", db, "--session", id],
    ]) {
      const out: string[] = [];
      expect(await main(args, { cwd: os.tmpdir(), out: (t) => out.push(t), err: () => {} })).to.equal(0);
      const text = out.join("\n");
      expect(text).to.contain("Context Epoch 1 (initial)");
      expect(text).to.contain("  | branch main");
      expect(text).to.contain('  core/branch = "feature"');
      expect(text).to.match(/system-update +"branch is now feature"/);
    }
    const json: string[] = [];
    expect(await main(["inspect", id, "--data", dir, "--json"], { cwd: dir, out: (t) => json.push(t), err: () => {} })).to.equal(
      0,
    );
    const printed = JSON.parse(json.join("\n")) as {
      epoch: { number: number; reason: string; baseline: string; snapshot: object };
    };
    expect(printed.epoch).to.deep.include({ number: 1, reason: "initial", baseline: "branch main" });
    expect(printed.epoch.snapshot).to.deep.equal({ "core/branch": { value: "feature" } });
  });

  it("an unknown session is an error naming it, without a stack trace", async () => {
    const host = await openHost(dir, { core: [], providers: { scripted: scriptedProvider() } });
    await host.close();
    const err: string[] = [];
    expect(await main(["inspect", "nope", "--data", dir], { cwd: dir, out: () => {}, err: (t) => err.push(t) })).to.equal(1);
    expect(err.join("\n"))
      .to.contain("nope")
      .and.not.match(/\n\s+at /);
  });
});
