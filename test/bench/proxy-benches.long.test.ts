// The proxy benches (issue 47) run for real at a small size (BENCH_QUICK=1) and print their
// lines: proxy-overhead's added-ms against the parse-and-stringify floor and beside a bare
// forwarder, proxy-stream's time to first byte against the direct stream (and the bare one's), proxy-concurrency's errors, memory and p99.

import { execFile } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { expect } from "chai";
import { isBenchLine } from "../../scripts/bench/measure.ts";

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, "../..");

describe("proxy benches (BENCH_QUICK=1)", function () {
  this.timeout(300_000);
  const tmp = mkdtempSync(path.join(os.tmpdir(), "proxy-benches-"));
  after(() => rmSync(tmp, { recursive: true, force: true }));

  const bench = async (file: string) => {
    const env: NodeJS.ProcessEnv = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("BENCH_")));
    Object.assign(env, { BENCH_QUICK: "1", BENCH_TMPDIR: tmp });
    const { stdout } = await run(process.execPath, ["--expose-gc", "--import", "tsx", path.join("scripts/bench", file)], {
      cwd: root,
      env,
    });
    const lines = stdout.split("\n").filter((line) => line.trim() !== "");
    expect(lines.every(isBenchLine), stdout).to.equal(true);
    return lines.map((line) => JSON.parse(line) as { bench: string; metric: string; unit: string; value: number });
  };

  it("proxy-overhead, proxy-stream and proxy-concurrency print their metrics; no request fails", async () => {
    const lines = [
      ...(await bench("proxy-overhead.bench.ts")),
      ...(await bench("proxy-stream.bench.ts")),
      ...(await bench("proxy-concurrency.bench.ts")),
    ];
    expect(lines.map((line) => [line.bench, line.metric, line.unit])).to.deep.equal([
      ["proxy-overhead", "added-ms", "ms"],
      ["proxy-overhead", "request-ms", "ms"],
      ["proxy-overhead", "added-ms-in-process", "ms"],
      ["proxy-overhead", "bare-added-ms", "ms"],
      ["proxy-overhead", "added-over-bare-ms", "ms"],
      ["proxy-stream", "ttfb-ratio", "ms"],
      ["proxy-stream", "bare-ttfb-ratio", "ms"],
      ["proxy-concurrency", "errors", "requests"],
      ["proxy-concurrency", "rss-mib", "MiB"],
      ["proxy-concurrency", "added-p99-ms", "ms"],
    ]);
    expect(lines.find((line) => line.metric === "errors")?.value).to.equal(0);
  });

  it("removed their temp folders", () => {
    expect(readdirSync(tmp)).to.deep.equal([]);
  });
});
