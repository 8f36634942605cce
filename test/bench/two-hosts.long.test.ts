// The `two-hosts` bench in quick mode (1 run of 1 s): two host processes on one SQLite
// file, with the in-flight lease and without. With the lease neither process calls the
// provider for a boundary the other called for, nor runs a tool twice; without it both
// happen (the baseline), and both modes admit replies. It prints only well-formed bench
// lines and leaves no temp folder behind.

import { execFile } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { expect } from "chai";
import { benchLinesOf } from "./lines.ts";

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, "../..");

describe("two-hosts bench (quick mode)", function () {
  this.timeout(60_000);

  it("prints duplicate-provider-calls 0 against a baseline above 0, duplicate-tool-runs likewise, and steps-per-s", async () => {
    const tmp = mkdtempSync(path.join(os.tmpdir(), "context-host-two-hosts-test-"));
    try {
      const env: NodeJS.ProcessEnv = Object.fromEntries(
        Object.entries(process.env).filter(([name]) => !name.startsWith("BENCH_")),
      );
      Object.assign(env, { BENCH_QUICK: "1", BENCH_TMPDIR: tmp });
      const { stdout } = await run(process.execPath, ["--import", "tsx", "scripts/bench/two-hosts.bench.ts"], { cwd: root, env });
      const lines = benchLinesOf(stdout);
      expect(lines.map((l) => [l.bench, l.metric, l.unit])).to.deep.equal([
        ["two-hosts", "duplicate-provider-calls", "calls"],
        ["two-hosts", "duplicate-tool-runs", "runs"],
        ["two-hosts", "steps-per-s", "steps/s"],
      ]);
      // benchLinesOf checks every baseline is above 0: without the lease there were duplicates.
      expect(lines[0]?.value).to.equal(0);
      expect(lines[1]?.value).to.equal(0);
      expect(lines[2]?.value as number).to.be.greaterThan(0);
      expect(readdirSync(tmp)).to.deep.equal([]);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });
});
