// The middleware benches (middleware-overhead, middleware-cache) in quick mode: each runs in
// a child process as the bench runner starts it, exits on its own and prints well-formed
// bench lines; the cache bench's every in-epoch request extends the previous one.

import { execFile } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { expect } from "chai";
import { benchLinesOf } from "./lines.ts";

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, "../..");

describe("middleware benches (quick mode)", function () {
  this.timeout(60_000);
  let tmp = "";
  before(() => {
    tmp = mkdtempSync(path.join(os.tmpdir(), "context-host-middleware-bench-test-"));
  });
  after(() => rmSync(tmp, { recursive: true, force: true }));

  const bench = async (file: string) => {
    const env: NodeJS.ProcessEnv = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("BENCH_")));
    Object.assign(env, { BENCH_QUICK: "1", BENCH_TMPDIR: tmp });
    const { stdout } = await run(process.execPath, ["--expose-gc", "--import", "tsx", path.join("scripts/bench", file)], {
      cwd: root,
      env,
    });
    return benchLinesOf(stdout);
  };

  it("middleware-overhead prints the ms contextMiddleware adds to a generateText call carrying the same context by hand, and to a bare call, and the first again with forced collections", async () => {
    const lines = await bench("middleware-overhead.bench.ts");
    expect(lines.map((l) => [l.bench, l.metric, l.unit])).to.deep.equal([
      ["middleware-overhead", "added-ms", "ms"],
      ["middleware-overhead", "added-ms-vs-bare", "ms"],
      ["middleware-overhead", "added-ms-forced-gc", "ms"],
    ]);
    for (const line of lines) expect(line.baseline as number).to.be.above(0);
  });

  it("middleware-cache: every request of the tool loop extends the previous one, re-rendering does not", async () => {
    const lines = await bench("middleware-cache.bench.ts");
    expect(lines.map((l) => [l.bench, l.metric, l.unit])).to.deep.equal([["middleware-cache", "extension-share-pct", "%"]]);
    expect(lines[0]!.value).to.equal(100);
    expect(lines[0]!.baseline as number).to.be.below(100);
  });

  it("removed their temp folders", () => {
    expect(readdirSync(tmp)).to.deep.equal([]);
  });
});
