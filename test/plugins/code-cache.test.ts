// The worker program's V8 code cache on disk (decision 193): stored by the first worker to
// answer an observation, used by later starts as it is, and, when V8 refuses it (another V8,
// other flags, a damaged file), compiled without it and stored again; never an error.

import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { expect } from "chai";
import { storedCodeCache } from "../../core/plugins/program-cache.ts";
import { runJsonChild } from "../../scripts/bench/start-up-children.ts";

const child = path.join(import.meta.dirname, "code-cache-child.ts");
const projectRoot = path.resolve(import.meta.dirname, "../..");

const plugin = `import { definePlugin } from "context-host";
import Type from "typebox";
export default definePlugin({
  name: "cached",
  setup(api) {
    api.source({ key: "cached/value", schema: Type.Integer(), load: () => 1, baseline: (n) => \`value \${n}\`, update: (_, n) => \`now \${n}\` });
  },
});
`;

/** Runs a host process over `plugins` with its cache in `cacheHome`; resolves with what it printed. */
function runHost(
  plugins: string,
  cacheHome: string,
  wait: boolean,
  shared = false,
): Promise<{ plugins: number; failures: string[]; hasBaseline: boolean }> {
  const args = [plugins, ...(wait ? ["wait"] : []), ...(shared ? ["shared"] : [])];
  const env = { ...process.env, XDG_CACHE_HOME: cacheHome, CONTEXT_HOST_CACHE: "" };
  return runJsonChild(child, args, { cwd: projectRoot, env });
}

describe("worker program code cache", () => {
  let folder: string;
  let dir: string;

  beforeEach(() => {
    folder = mkdtempSync(path.join(os.tmpdir(), "code-cache-"));
    dir = path.join(folder, "cache", "context-host");
  });
  afterEach(() => rmSync(folder, { recursive: true, force: true }));

  it("is stored after the first observation, used as it is, and stored again once V8 refuses it", async function () {
    this.timeout(60_000);
    const plugins = path.join(folder, "plugins");
    mkdirSync(plugins);
    writeFileSync(path.join(plugins, "cached.ts"), plugin);
    const cacheHome = path.join(folder, "cache");
    const codeCacheFile = () => {
      const names = readdirSync(dir).filter((name) => name.startsWith("code-cache-"));
      expect(names).to.have.length(1);
      return path.join(dir, names[0] as string);
    };

    expect(await runHost(plugins, cacheHome, true)).to.deep.equal({ plugins: 1, failures: [], hasBaseline: true });
    const file = codeCacheFile();
    const stored = readFileSync(file);
    const { ino } = statSync(file);
    expect(statSync(file).mode & 0o777).to.equal(0o600);

    // Used as it is: not written again (a write renames a new file into place).
    expect(await runHost(plugins, cacheHome, false)).to.deep.equal({ plugins: 1, failures: [], hasBaseline: true });
    expect(codeCacheFile()).to.equal(file);
    expect(statSync(file).ino).to.equal(ino);
    expect(readFileSync(file).equals(stored)).to.equal(true);

    // What V8 refuses costs a compile, then is replaced.
    writeFileSync(file, "not a code cache");
    expect(await runHost(plugins, cacheHome, true)).to.deep.equal({ plugins: 1, failures: [], hasBaseline: true });
    expect(readFileSync(codeCacheFile()).toString()).to.not.equal("not a code cache");
  });

  it("is stored by a shared worker too (plugins beyond the dedicated workers share them)", async function () {
    this.timeout(60_000);
    const plugins = path.join(folder, "plugins");
    mkdirSync(plugins);
    writeFileSync(path.join(plugins, "cached.ts"), plugin);
    expect(await runHost(plugins, path.join(folder, "cache"), true, true)).to.deep.equal({
      plugins: 1,
      failures: [],
      hasBaseline: true,
    });
    expect(readdirSync(dir).filter((name) => name.startsWith("code-cache-"))).to.have.length(1);
  });

  it("is found by the program's source and read only from a private file", () => {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const { file, bytes } = storedCodeCache("program one", dir);
    expect(bytes).to.equal(undefined);
    expect(storedCodeCache("program two", dir).file).to.not.equal(file);
    writeFileSync(file as string, "cache of one", { mode: 0o600 });
    expect(storedCodeCache("program one", dir).bytes?.toString()).to.equal("cache of one");
    expect(storedCodeCache("program two", dir).bytes).to.equal(undefined);
    chmodSync(file as string, 0o666);
    expect(storedCodeCache("program one", dir)).to.deep.equal({ file });
  });
});
