// The MCP benches (mcp-boundary, mcp-update) in quick mode: each runs in a child process as the
// bench runner starts it, exits on its own, prints only well-formed bench lines (the six fields
// in order, ratio = value / baseline) and leaves no temp folder behind.

import { execFile } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { expect } from "chai";
import { benchLinesOf } from "./lines.ts";

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, "../..");

describe("MCP benches (quick mode)", function () {
  this.timeout(120_000);

  let tmp: string;
  let boundary: Promise<{ stdout: string }>;
  let update: Promise<{ stdout: string }>;

  before(() => {
    tmp = mkdtempSync(path.join(os.tmpdir(), "context-host-mcp-bench-test-"));
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
    boundary = bench("mcp-boundary.bench.ts");
    update = bench("mcp-update.bench.ts");
  });

  after(async () => {
    await Promise.allSettled([boundary, update]);
    rmSync(tmp, { recursive: true, force: true });
  });

  it("mcp-boundary prints boundary-ms against a host without MCP, and no read at a boundary where nothing changed", async () => {
    const lines = benchLinesOf((await boundary).stdout);
    expect(lines.map((l) => [l.bench, l.metric, l.unit])).to.deep.equal([
      ["mcp-boundary", "boundary-ms", "ms"],
      ["mcp-boundary", "reads-per-boundary", "reads"],
    ]);
    expect(lines[1]?.value).to.equal(0);
    expect(lines[1]?.baseline).to.equal(50);
  });

  it("mcp-update prints exactly one read per update (a polling host reads every resource) and the read's latency", async () => {
    const lines = benchLinesOf((await update).stdout);
    expect(lines.map((l) => [l.bench, l.metric, l.unit])).to.deep.equal([
      ["mcp-update", "reads-per-update", "reads"],
      ["mcp-update", "read-ms", "ms"],
    ]);
    expect(lines[0]?.value).to.equal(1);
    expect(lines[0]?.baseline).to.equal(50);
  });

  it("leaves no temp folder behind", async () => {
    await Promise.allSettled([boundary, update]);
    expect(readdirSync(tmp)).to.deep.equal([]);
  });
});
