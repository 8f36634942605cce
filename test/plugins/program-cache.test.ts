// The worker programs' cache on disk (decision 092): a program is built once and used
// again while every file it was built from is unchanged; anything wrong with the cache
// means a fresh build, never an error and never a program from a folder others can write.

import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { expect } from "chai";
import {
  type BuiltProgram,
  cachedProgram as cachedProgramNow,
  keptPrograms,
  programCacheDir,
} from "../../core/plugins/program-cache.ts";

/** The program, once its build (if any) is stored: a build is stored just after the caller gets it. */
async function cachedProgram(...args: Parameters<typeof cachedProgramNow>): Promise<string> {
  const text = await cachedProgramNow(...args);
  await new Promise((resolve) => setImmediate(resolve));
  return text;
}

describe("worker program cache", () => {
  let folder: string;
  let dir: string;
  let input: string;
  let builds: number;
  const build = async (): Promise<BuiltProgram> => {
    builds++;
    return { text: `program ${builds}`, inputs: [input] };
  };

  beforeEach(() => {
    folder = mkdtempSync(path.join(os.tmpdir(), "program-cache-"));
    dir = path.join(folder, "cache");
    input = path.join(folder, "entry.js");
    writeFileSync(input, "one");
    builds = 0;
  });
  afterEach(() => rmSync(folder, { recursive: true, force: true }));

  it("builds once, then gives the cached program while its inputs are unchanged", async () => {
    expect(await cachedProgram("k", build, dir)).to.equal("program 1");
    expect(await cachedProgram("k", build, dir)).to.equal("program 1");
    expect(builds).to.equal(1);
    expect(readdirSync(dir)).to.have.length(1);
  });

  it("builds again when an input's contents change, and for another key", async () => {
    await cachedProgram("k", build, dir);
    writeFileSync(input, "two");
    expect(await cachedProgram("k", build, dir)).to.equal("program 2");
    expect(await cachedProgram("k", build, dir)).to.equal("program 2");
    expect(await cachedProgram("other", build, dir)).to.equal("program 3");
    expect(builds).to.equal(3);
  });

  it("builds again when an input is gone or the cache file is damaged", async () => {
    await cachedProgram("k", build, dir);
    const [file] = readdirSync(dir);
    writeFileSync(path.join(dir, file as string), "{ not json", { mode: 0o600 });
    expect(await cachedProgram("k", build, dir)).to.equal("program 2");
    rmSync(input);
    expect(await cachedProgram("k", async () => ({ text: "rebuilt", inputs: [] }), dir)).to.equal("rebuilt");
  });

  it("never uses a cache folder or file that others can write", async () => {
    await cachedProgram("k", build, dir);
    chmodSync(dir, 0o777);
    expect(await cachedProgram("k", build, dir)).to.equal("program 2");
    chmodSync(dir, 0o700);
    const [file] = readdirSync(dir);
    chmodSync(path.join(dir, file as string), 0o666);
    expect(await cachedProgram("k", build, dir)).to.equal("program 3");
  });

  it(`keeps the ${keptPrograms} most recently used programs`, async () => {
    for (let key = 0; key < keptPrograms; key++) await cachedProgram(`key ${key}`, build, dir);
    // The first, used again, is kept; the second, the least recently used, is not.
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await cachedProgram("key 0", build, dir)).to.equal("program 1");
    await cachedProgram("one more", build, dir);
    expect(readdirSync(dir)).to.have.length(keptPrograms);
    expect(await cachedProgram("key 0", build, dir)).to.equal("program 1");
    expect(await cachedProgram("key 1", build, dir)).to.equal(`program ${keptPrograms + 2}`);
  });

  it("vouches for a settled input by its stat, and reads the contents once that changed (a stat is cheaper than reading the file)", async () => {
    // Node's own folder changed long before this test: its ctime has settled. A file written
    // just now has not, and is recorded without a stat (a change within the file system's
    // time step could leave its stat as it was).
    const settled = path.dirname(process.execPath);
    const inputs = [settled, input];
    const stored = () => {
      const [file] = readdirSync(dir);
      return path.join(dir, file as string);
    };
    expect(await cachedProgram("k", async () => ({ text: "built", inputs }), dir)).to.equal("built");
    const cached = JSON.parse(readFileSync(stored(), "utf8")) as { inputs: string[][] };
    expect(cached.inputs.map((entry) => entry.length)).to.deep.equal([3, 2]);
    const rewrite = (print: string, stat: string) => {
      const [, ...rest] = cached.inputs;
      const entries = [[settled, print, stat], ...rest];
      writeFileSync(stored(), JSON.stringify({ ...cached, inputs: entries }));
    };
    const [, print, stat] = cached.inputs[0] as [string, string, string];
    const again = async () => ({ text: "rebuilt", inputs });
    // The stat vouches: a stored fingerprint that no longer matches is not even compared.
    rewrite("stale fingerprint", stat);
    expect(await cachedProgram("k", again, dir)).to.equal("built");
    // Another stat: the contents are read, and they still match.
    rewrite(print, "another stat");
    expect(await cachedProgram("k", again, dir)).to.equal("built");
    // Another stat and contents that differ: built again.
    rewrite("stale fingerprint", "another stat");
    expect(await cachedProgram("k", again, dir)).to.equal("rebuilt");
  });

  it("a cache folder that cannot be made still gives a built program", async () => {
    writeFileSync(dir, "a file where the folder would be");
    expect(await cachedProgram("k", build, dir)).to.equal("program 1");
    expect(await cachedProgram("k", build, dir)).to.equal("program 2");
  });

  it("lives in $XDG_CACHE_HOME, else ~/.cache, under context-host; CONTEXT_HOST_CACHE=off turns it off", () => {
    expect(programCacheDir({ XDG_CACHE_HOME: "/x/cache" })).to.equal(path.join("/x/cache", "context-host"));
    expect(programCacheDir({})).to.equal(path.join(os.homedir(), ".cache", "context-host"));
    expect(programCacheDir({ XDG_CACHE_HOME: "/x/cache", CONTEXT_HOST_CACHE: "off" })).to.equal(undefined);
  });
});
