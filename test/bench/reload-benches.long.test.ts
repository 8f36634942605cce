// The plugin-host benches (reload-latency, reload-heap, cold-start) in their quick mode:
// each runs in a child process as the bench runner would start it, exits on its own,
// prints only well-formed bench lines (the six fields in order, ratio = value / baseline)
// and leaves no temp folder behind. The three run at once to keep this suite short.

import { execFile } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { expect } from "chai";
import { benchLinesOf } from "./lines.ts";

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, "../..");

interface Output {
  readonly stdout: string;
  readonly stderr: string;
}

function linesOf(output: Output): Record<string, unknown>[] {
  return benchLinesOf(output.stdout);
}

describe("plugin-host benches (quick mode)", function () {
  this.timeout(60_000);

  let tmp: string;
  const started: Array<ReturnType<typeof run>> = [];
  let latency: Promise<Output>;
  let heap: Promise<Output>;
  let coldStart: Promise<Output>;

  before(() => {
    tmp = mkdtempSync(path.join(os.tmpdir(), "context-host-bench-test-"));
    // Only quick mode and our temp folder: no size setting of the caller's environment leaks in.
    const env: NodeJS.ProcessEnv = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("BENCH_")));
    Object.assign(env, { BENCH_QUICK: "1", BENCH_TMPDIR: tmp });
    const bench = (file: string, flags: readonly string[]) => {
      const output = run(process.execPath, [...flags, "--import", "tsx", path.join("scripts/bench", file)], { cwd: root, env });
      started.push(output);
      // Rejections are checked by each test; do not let one go unhandled meanwhile.
      output.catch(() => {});
      return output;
    };
    latency = bench("reload-latency.bench.ts", ["--expose-gc"]);
    // Without --expose-gc: the heap bench must re-run itself in a child that has it.
    heap = bench("reload-heap.bench.ts", []);
    coldStart = bench("cold-start.bench.ts", ["--expose-gc"]);
  });

  after(async () => {
    // A bench still running (a test timed out) is stopped; on SIGTERM it removes its temp folder.
    for (const output of started) if (output.child.exitCode === null && output.child.signalCode === null) output.child.kill();
    await Promise.allSettled(started);
    rmSync(tmp, { recursive: true, force: true });
  });

  it("reload-latency prints write-to-active-ms in ms against a cold host start, and its parts", async () => {
    const lines = linesOf(await latency);
    expect(lines.map((l) => [l.bench, l.metric, l.unit])).to.deep.equal(
      ["write-to-active-ms", "watch-ms", "bundle-ms", "evaluate-ms", "setup-ms", "swap-ms"].map((m) => [
        "reload-latency",
        m,
        "ms",
      ]),
    );
    // Each part is a share of the whole in every sample, so of the medians too.
    for (const part of lines.slice(1))
      expect(part.value as number, part.metric as string).to.be.at.most(lines[0]?.value as number);
  });

  it("reload-heap prints heap-growth-mb and heap-growth-per-reload-kb with the import() baseline", async () => {
    const lines = linesOf(await heap);
    expect(lines.map((l) => [l.bench, l.metric, l.unit])).to.deep.equal([
      ["reload-heap", "heap-growth-mb", "MiB"],
      ["reload-heap", "heap-growth-per-reload-kb", "KiB"],
      ["reload-heap", "worker-heap-growth-mb", "MiB"],
    ]);
    // Cache-busting import() of a 1 MiB plugin keeps well over 1 MiB per reload.
    expect(lines[1]?.baseline as number).to.be.greaterThan(1024);
  });

  it("cold-start prints ms of a host with plugins against one without, and against the empty workers' floor", async () => {
    const lines = linesOf(await coldStart);
    expect(lines.map((l) => [l.bench, l.metric, l.unit])).to.deep.equal([
      ["cold-start", "ms", "ms"],
      ["cold-start", "ms-vs-worker-floor", "ms"],
    ]);
  });

  it("every bench removed its temp folders", async () => {
    await Promise.all([latency, heap, coldStart]);
    expect(readdirSync(tmp)).to.deep.equal([]);
  });
});
