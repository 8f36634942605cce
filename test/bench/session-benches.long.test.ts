// The session benches (cache-prefix, cache-prefix-wire, boundary, session-length, cost) in quick mode: each
// runs in a child process as the bench runner starts it, exits on its own, prints only
// well-formed bench lines (the six fields in order, ratio = value / baseline) and leaves
// no temp folder behind. All run at once to keep this suite short.

import { execFile } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { expect } from "chai";
import { benchLinesOf } from "./lines.ts";

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, "../..");

describe("session benches (quick mode)", function () {
  this.timeout(30_000);

  let tmp: string;
  let cachePrefix: Promise<{ stdout: string }>;
  let cachePrefixWire: Promise<{ stdout: string }>;
  let boundary: Promise<{ stdout: string }>;
  let sessionLength: Promise<{ stdout: string }>;
  let cost: Promise<{ stdout: string }>;

  before(() => {
    tmp = mkdtempSync(path.join(os.tmpdir(), "context-host-session-bench-test-"));
    // Only quick mode and our temp folder: no size setting of the caller's environment leaks in.
    const env: NodeJS.ProcessEnv = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("BENCH_")));
    Object.assign(env, { BENCH_QUICK: "1", BENCH_TMPDIR: tmp });
    const bench = (file: string) => {
      const output = run(process.execPath, ["--expose-gc", "--import", "tsx", path.join("scripts/bench", file)], {
        cwd: root,
        env,
      });
      output.catch(() => {}); // checked by each test; not unhandled meanwhile
      return output;
    };
    cachePrefix = bench("cache-prefix.bench.ts");
    cachePrefixWire = bench("cache-prefix-wire.bench.ts");
    boundary = bench("boundary.bench.ts");
    sessionLength = bench("session-length.bench.ts");
    cost = bench("cost.bench.ts");
  });

  after(async () => {
    await Promise.allSettled([cachePrefix, cachePrefixWire, boundary, sessionLength, cost]);
    rmSync(tmp, { recursive: true, force: true });
  });

  it("cache-prefix prints extension-share-pct (every in-epoch request extends the previous) and uncached-bytes", async () => {
    const lines = benchLinesOf((await cachePrefix).stdout);
    expect(lines.map((l) => [l.bench, l.metric, l.unit])).to.deep.equal([
      ["cache-prefix", "extension-share-pct", "%"],
      ["cache-prefix", "uncached-bytes", "B"],
    ]);
    expect(lines[0]?.value).to.equal(100);
    expect(lines[0]?.baseline as number).to.be.lessThan(100);
    expect(lines[1]?.ratio as number).to.be.lessThan(1);
  });

  it("cache-prefix-wire prints the extension share of each adapter's recorded bodies (every in-epoch body extends the previous)", async () => {
    const lines = benchLinesOf((await cachePrefixWire).stdout);
    expect(lines.map((l) => [l.bench, l.metric, l.unit])).to.deep.equal([
      ["cache-prefix-wire", "anthropic-extension-share-pct", "%"],
      ["cache-prefix-wire", "openai-extension-share-pct", "%"],
    ]);
    for (const line of lines) {
      expect(line.value, JSON.stringify(line)).to.equal(100);
      expect(line.baseline as number, JSON.stringify(line)).to.be.lessThan(100);
    }
  });

  it("boundary prints median-ms of a step against reconcile alone", async () => {
    const lines = benchLinesOf((await boundary).stdout);
    expect(lines.map((l) => [l.bench, l.metric, l.unit])).to.deep.equal([["boundary", "median-ms", "ms"]]);
  });

  it("session-length prints a step at 5,000 messages against one at 100 and against JSON.stringify of its request", async () => {
    const lines = benchLinesOf((await sessionLength).stdout);
    expect(lines.map((l) => [l.bench, l.metric, l.unit])).to.deep.equal([
      ["session-length", "step-ms-5000", "ms"],
      ["session-length", "step-vs-json-5000", "ms"],
    ]);
    expect(lines[0]?.value, "both lines time the same steps").to.equal(lines[1]?.value);
  });

  it("all removed their temp folders", async () => {
    await Promise.all([cachePrefix, cachePrefixWire, boundary, sessionLength]);
    expect(readdirSync(tmp)).to.deep.equal([]);
  });

  it("cost prints each model's dollars against the naive host, the single-breakpoint placement and the floor beside", async () => {
    const lines = benchLinesOf((await cost).stdout);
    const opus = "usd-per-session-claude-opus-4-8";
    expect(lines.map((l) => l.metric)).to.deep.equal([
      opus,
      `${opus}-single-breakpoint`,
      `${opus}-floor`,
      `${opus}-vs-env-details`,
      "cache-hit-share",
      "usd-per-session-gpt-5",
      "usd-per-session-gpt-5-vs-env-details",
      "usd-per-session-gpt-5.6",
      "usd-per-session-gpt-5.6-vs-env-details",
    ]);
    const value = (metric: string) => lines.find((l) => l.metric === metric)!.value as number;
    // The breakpoints of decision 100 pay less than one moving breakpoint, and no prefix cache pays less than the floor.
    expect(value(opus)).to.be.below(value(`${opus}-single-breakpoint`));
    expect(value(opus)).to.be.at.least(value(`${opus}-floor`));
    expect(lines.filter((l) => l.unit === "USD").every((l) => (l.ratio as number) < 1)).to.equal(true);
    // The share of input read from cache is higher than with one moving breakpoint.
    expect(lines.find((l) => l.metric === "cache-hit-share")!.ratio as number).to.be.above(1);
  });
});
