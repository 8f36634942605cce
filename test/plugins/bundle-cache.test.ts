// The plugin bundles' cache on disk (decision 191): a restart with unchanged plugins takes
// each bundle from the cache instead of esbuild; anything that would make esbuild bundle
// differently (an edited or deleted input, a new file that shadows how an import resolves,
// a new tsconfig.json above the plugin) means a fresh bundle, and what the fingerprints
// cannot vouch for (tsconfig `paths`, globs, a bundle error) is never stored.

import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { expect } from "chai";
import { BundleFailed, bundlePlugin as bundleNow, type PluginBundle } from "../../core/plugins/bundle.ts";

/** The bundle, once it is stored (a bundle is stored just after the caller gets it). */
async function bundlePlugin(...args: Parameters<typeof bundleNow>): Promise<PluginBundle> {
  const bundle = await bundleNow(...args);
  await new Promise((resolve) => setImmediate(resolve));
  return bundle;
}

const fromCache = "\n// from the cache\n";

describe("plugin bundle cache", () => {
  let base: string;
  let folder: string;
  let cache: string;
  const saved = { XDG_CACHE_HOME: process.env.XDG_CACHE_HOME, CONTEXT_HOST_CACHE: process.env.CONTEXT_HOST_CACHE };

  const write = (relative: string, text: string) => {
    const file = path.join(folder, relative);
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, text);
    return file;
  };
  const stored = () => (existsSync(cache) ? readdirSync(cache).filter((name) => name.startsWith("plugin-bundle-")) : []);
  /** Marks every stored bundle's code: a bundle that carries the mark came from the cache, not from esbuild. */
  const markStored = () => {
    for (const name of stored()) {
      const file = path.join(cache, name);
      const entry = JSON.parse(readFileSync(file, "utf8")) as { text: { code: string } };
      entry.text.code += fromCache;
      writeFileSync(file, JSON.stringify(entry));
    }
  };
  const isFromCache = (bundle: PluginBundle) => bundle.code.endsWith(fromCache);
  /** Bundles `entry`, marks what was stored, and bundles it again. */
  const bundleTwice = async (entry: string) => {
    const first = await bundlePlugin(entry);
    markStored();
    return { first, second: await bundlePlugin(entry) };
  };

  beforeEach(() => {
    base = mkdtempSync(path.join(os.tmpdir(), "bundle-cache-"));
    // The cache lies outside the project: a plugin folder's listing is part of what a bundle depends on.
    folder = path.join(base, "project");
    mkdirSync(folder);
    process.env.XDG_CACHE_HOME = path.join(base, "user-cache");
    delete process.env.CONTEXT_HOST_CACHE;
    cache = path.join(base, "user-cache", "context-host");
  });
  afterEach(() => {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
    rmSync(base, { recursive: true, force: true });
  });

  it("an unchanged plugin's bundle comes from the cache, with the same hash and inputs", async () => {
    write("notes/words.ts", `export const word = "apple";\n`);
    const entry = write("notes/index.ts", `import { word } from "./words.ts";\nexport default word;\n`);
    const first = await bundlePlugin(entry);
    const again = await bundlePlugin(entry);
    expect(again).to.deep.equal(first);
    expect(first.inputs).to.have.members([entry, path.join(folder, "notes", "words.ts")]);
    markStored();
    expect(isFromCache(await bundlePlugin(entry))).to.equal(true);
  });

  it("an edited input is bundled afresh", async () => {
    const words = write("notes/words.ts", `export const word = "apple";\n`);
    const entry = write("notes/index.ts", `import { word } from "./words.ts";\nexport default word;\n`);
    await bundleTwice(entry);
    writeFileSync(words, `export const word = "banana";\n`);
    const edited = await bundlePlugin(entry);
    expect(isFromCache(edited)).to.equal(false);
    expect(edited.code).to.include("banana");
  });

  it("a deleted input fails the bundle rather than being served from the cache", async () => {
    const words = write("notes/words.ts", `export const word = "apple";\n`);
    const entry = write("notes/index.ts", `import { word } from "./words.ts";\nexport default word;\n`);
    await bundleTwice(entry);
    unlinkSync(words);
    const failure = await bundlePlugin(entry).catch((error: unknown) => error);
    expect(failure).to.be.instanceOf(BundleFailed);
  });

  it("a new file that shadows a folder import (./util.ts over ./util/index.ts) is bundled afresh", async () => {
    write("util/index.ts", `export const from = "util/index.ts";\n`);
    const entry = write("plugin.ts", `import { from } from "./util";\nexport default from;\n`);
    expect(isFromCache((await bundleTwice(entry)).second)).to.equal(true);
    write("util.ts", `export const from = "util.ts";\n`);
    const shadowed = await bundlePlugin(entry);
    expect(isFromCache(shadowed)).to.equal(false);
    expect(shadowed.code).to.include(`"util.ts"`);
  });

  it("a new index.tsx, which esbuild prefers to index.ts, is bundled afresh", async () => {
    write("util/index.ts", `export const from = "index.ts";\n`);
    const entry = write("plugin.ts", `import { from } from "./util";\nexport default from;\n`);
    await bundleTwice(entry);
    write("util/index.tsx", `export const from = "index.tsx";\n`);
    const shadowed = await bundlePlugin(entry);
    expect(isFromCache(shadowed)).to.equal(false);
    expect(shadowed.code).to.include(`"index.tsx"`);
  });

  it("a new words.js shadows the words.ts an import of ./words.js found: bundled afresh", async () => {
    write("lib/words.ts", `export const word = "from ts";\n`);
    const entry = write("plugin.ts", `import { word } from "./lib/words.js";\nexport default word;\n`);
    await bundleTwice(entry);
    write("lib/words.js", `export const word = "from js";\n`);
    const shadowed = await bundlePlugin(entry);
    expect(isFromCache(shadowed)).to.equal(false);
    expect(shadowed.code).to.include("from js");
  });

  it("a new tsconfig.json above the plugin that maps a package import to a local file is bundled afresh", async () => {
    write("words.ts", `export const word = "local";\n`);
    const entry = write("plugins/plugin.ts", `import { word } from "words";\nexport default word;\n`);
    const { second } = await bundleTwice(entry);
    expect(isFromCache(second)).to.equal(true);
    expect(second.code).to.include(`require("words")`);
    write("tsconfig.json", JSON.stringify({ compilerOptions: { paths: { words: ["./words.ts"] } } }));
    const mapped = await bundlePlugin(entry);
    expect(isFromCache(mapped)).to.equal(false);
    expect(mapped.code).to.include(`"local"`).and.not.include(`require("words")`);
  });

  it("a bundle with an import resolved through tsconfig paths, a glob import or an extended tsconfig is not stored", async () => {
    write("lib/words.ts", `export const word = "mapped";\n`);
    write("tsconfig.json", JSON.stringify({ compilerOptions: { paths: { "@lib/*": ["./lib/*"] } } }));
    await bundlePlugin(write("plugins/mapped.ts", `export { word } from "@lib/words";\n`));
    write("plugins/locales/en.ts", "export default 'hello';\n");
    await bundlePlugin(write("plugins/glob.ts", `export const load = (n: string) => import(\`./locales/\${n}.ts\`);\n`));
    write("other/tsconfig.json", JSON.stringify({ extends: "./base.json" }));
    write("other/base.json", JSON.stringify({ compilerOptions: { experimentalDecorators: true } }));
    await bundlePlugin(write("other/plugin.ts", "export default 1;\n"));
    expect(stored()).to.deep.equal([]);
    await bundlePlugin(write("plugins/plain.ts", "export default 1;\n"));
    expect(stored()).to.have.length(1);
  });

  it("a package plugin's cached bundle keeps its own dependencies first and its packages external", async () => {
    const root = path.join("node_modules", "context-host-plugin-tides");
    write(path.join(root, "package.json"), JSON.stringify({ name: "context-host-plugin-tides", version: "1.0.0" }));
    write(path.join(root, "plugins", "level.ts"), `export const level = "high";\n`);
    const entry = write(
      path.join(root, "plugins", "tides.ts"),
      `import moon from "moon-phase";\nimport { level } from "./level.ts";\nexport default [moon, level];\n`,
    );
    const first = await bundlePlugin(entry, { ownDependenciesFirst: true });
    markStored();
    const second = await bundlePlugin(entry, { ownDependenciesFirst: true });
    expect(isFromCache(second)).to.equal(true);
    expect(second.ownDependenciesFirst).to.equal(true);
    expect(second.inputs).to.deep.equal(first.inputs);
    // The package resolves when the bundle runs, not when it is made: a copy installed later is not frozen in it.
    expect(second.code).to.include(`require("moon-phase")`);
    expect((await bundlePlugin(entry)).ownDependenciesFirst).to.equal(undefined);
  });

  it("a bundle error is never stored: once fixed, the plugin is bundled afresh", async () => {
    const entry = write("broken.ts", "export default {;\n");
    const failure = await bundlePlugin(entry).catch((error: unknown) => error);
    expect(failure).to.be.instanceOf(BundleFailed);
    expect(stored()).to.deep.equal([]);
    writeFileSync(entry, "export default { fixed: true };\n");
    expect((await bundlePlugin(entry)).code).to.include("fixed: true");
    expect(stored()).to.have.length(1);
  });

  it("CONTEXT_HOST_CACHE=off bundles every time and stores nothing", async () => {
    process.env.CONTEXT_HOST_CACHE = "off";
    const entry = write("plugin.ts", "export default 1;\n");
    const first = await bundlePlugin(entry);
    expect((await bundlePlugin(entry)).hash).to.equal(first.hash);
    expect(existsSync(path.join(base, "user-cache"))).to.equal(false);
  });
});
