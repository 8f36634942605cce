// The package benches (cold-start compiled-ms, package-size) in their quick mode: each runs
// in a child process as the bench runner would start it, prints only well-formed bench
// lines and leaves no temp folder behind. Long: both build and pack the package.

import { execFile } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { expect } from "chai";
import { benchLinesOf } from "./lines.ts";

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, "../..");

describe("package benches (quick mode)", function () {
  this.timeout(120_000);
  let tmp: string;
  let env: NodeJS.ProcessEnv;

  before(() => {
    tmp = mkdtempSync(path.join(os.tmpdir(), "context-host-bench-test-"));
    env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("BENCH_")));
    Object.assign(env, { BENCH_QUICK: "1", BENCH_TMPDIR: tmp });
  });
  after(() => rmSync(tmp, { recursive: true, force: true }));

  it("cold-start compiled-ms: the compiled program reaches the Baseline, measured against the tsx path", async () => {
    const { stdout } = await run(process.execPath, ["--import", "tsx", "scripts/bench/cold-start-compiled.bench.ts"], {
      cwd: root,
      env,
    });
    const [line, ...rest] = benchLinesOf(stdout);
    expect(rest).to.deep.equal([]);
    expect([line?.bench, line?.metric, line?.unit]).to.deep.equal(["cold-start", "compiled-ms", "ms"]);
    expect(line?.value as number).to.be.greaterThan(0);
    expect(readdirSync(tmp)).to.deep.equal([]);
  });

  it("package-size unpacked-bytes: the tarball is smaller than the files git tracks", async () => {
    const { stdout } = await run(process.execPath, ["--import", "tsx", "scripts/bench/package-size.bench.ts"], {
      cwd: root,
      env,
    });
    const [line, ...rest] = benchLinesOf(stdout);
    expect(rest).to.deep.equal([]);
    expect([line?.bench, line?.metric, line?.unit]).to.deep.equal(["package-size", "unpacked-bytes", "B"]);
    expect(line?.ratio as number).to.be.lessThan(1);
  });
});
