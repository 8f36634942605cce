// The `plugin-memory` bench (issue 10) in quick mode, in a child process as the bench
// runner starts it: one fresh child per configuration, `rss-mb-per-plugin` as one
// well-formed bench line against the in-process host, no temp folder left behind.
// The bench itself fails unless the isolated host's plugins run off the host's thread.

import { execFile } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { expect } from "chai";
import { benchLinesOf } from "./lines.ts";

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, "../..");

describe("plugin-memory bench (quick mode)", function () {
  this.timeout(180_000);
  let tmp: string;
  let output: Promise<{ stdout: string; stderr: string }>;

  before(() => {
    tmp = mkdtempSync(path.join(os.tmpdir(), "context-host-plugin-memory-test-"));
    // Only quick mode and our temp folder: no size setting of the caller's environment leaks in.
    const env: NodeJS.ProcessEnv = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("BENCH_")));
    Object.assign(env, { BENCH_QUICK: "1", BENCH_TMPDIR: tmp });
    output = run(process.execPath, ["--expose-gc", "--import", "tsx", "scripts/bench/plugin-memory.bench.ts"], {
      cwd: root,
      env,
      encoding: "utf8",
      timeout: 170_000,
    });
    output.catch(() => {}); // checked by the tests; not unhandled meanwhile
  });

  after(async () => {
    await Promise.allSettled([output]);
    rmSync(tmp, { recursive: true, force: true });
  });

  it("prints rss-mb-per-plugin and idle-rss-mb-per-plugin in MiB against the in-process host", async () => {
    const lines = benchLinesOf((await output).stdout);
    expect(lines.map((l) => [l.bench, l.metric, l.unit])).to.deep.equal([
      ["plugin-memory", "rss-mb-per-plugin", "MiB"],
      ["plugin-memory", "idle-rss-mb-per-plugin", "MiB"],
    ]);
    // Each plugin holds its own data table: even in-process it costs the host memory.
    expect(lines[0]?.baseline as number).to.be.greaterThan(0);
  });

  it("removed its temp folder", async () => {
    await Promise.allSettled([output]);
    expect(readdirSync(tmp)).to.deep.equal([]);
  });
});
