// The bench runner and a bench for real (`npm run test:long`; moved out of `npm test`,
// issue 9): the system-context bench at a tiny size in a child process like the runner
// starts it (the compiled twin of scripts/bench, test/support/compiled.ts), and the runner
// streaming the lines of the benches its filter selects. Every line must be one JSON
// object with exactly {bench, metric, value, unit, baseline, ratio} (bench-format.test.ts).

import { execFile } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";
import { expect } from "chai";
import { programArgs } from "../support/compiled.ts";
import { checkBenchLine } from "./lines.ts";

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, "../..");
const tiny = { ...process.env, BENCH_SIZE: "20", BENCH_CHANGED: "2", BENCH_RUNS: "5", BENCH_WARMUP: "1" };

function checkLine(line: string): Record<string, unknown> {
  const parsed = checkBenchLine(line);
  expect(parsed.bench).to.be.a("string").that.is.not.empty;
  expect(parsed.metric).to.be.a("string").that.is.not.empty;
  expect(parsed.unit).to.be.a("string").that.is.not.empty;
  for (const field of ["value", "baseline", "ratio"] as const) {
    expect(parsed[field], field).to.be.a("number");
    expect(Number.isFinite(parsed[field]), field).to.equal(true);
  }
  return parsed;
}

describe("bench runner (child processes)", function () {
  this.timeout(20_000);

  it("the system-context bench prints only well-formed lines for initialize and reconcile", async () => {
    const { stdout } = await run(process.execPath, ["--expose-gc", ...programArgs("scripts/bench/system-context.bench.ts")], {
      cwd: root,
      env: tiny,
    });
    const lines = stdout.split("\n").filter((line) => line !== "");
    const parsed = lines.map(checkLine);
    expect(parsed.map((p) => [p.bench, p.metric, p.unit])).to.deep.equal([
      ["initialize", "median-ms", "ms"],
      ["reconcile", "median-ms", "ms"],
    ]);
  });

  it("the runner streams the lines of the benches its filter selects, and fails on a filter matching none", async () => {
    const { stdout } = await run(process.execPath, [...programArgs("scripts/bench/run.ts"), "system-context"], {
      cwd: root,
      env: tiny,
    });
    const lines = stdout.split("\n").filter((line) => line !== "");
    expect(lines.map((line) => checkLine(line).bench)).to.deep.equal(["initialize", "reconcile"]);

    const error = await run(process.execPath, [...programArgs("scripts/bench/run.ts"), "no-such-bench"], { cwd: root }).then(
      () => undefined,
      (e: unknown) => e as { code?: number; stdout?: string },
    );
    expect(error?.code).to.equal(2);
    expect(error?.stdout).to.equal("");
  });
});
