// A host process for test/plugins/code-cache.test.ts: starts the plugins of a folder, renders
// the first Baseline (every plugin observed), and prints what loaded. With `wait`, it then
// waits until the worker program's code cache file in the cache folder ($XDG_CACHE_HOME) is
// there and differs from what it was before the start: a worker stores it just after answering.
// With `shared`, every plugin runs on a shared worker (decision 185).

import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { silentLogger } from "../../core/base/clock.ts";
import { Scope } from "../../core/base/scope.ts";
import { startContextSources } from "../../core/host/context-sources.ts";
import { programCacheDir } from "../../core/plugins/program-cache.ts";
import * as SystemContext from "../../core/system-context.ts";

const [folder = ".", ...modes] = process.argv.slice(2);
const dir = programCacheDir() ?? "";
const codeCache = () => {
  const name = existsSync(dir) ? readdirSync(dir).find((n) => n.startsWith("code-cache-") && n.endsWith(".bin")) : undefined;
  return name === undefined ? undefined : readFileSync(path.join(dir, name));
};
const before = codeCache();
const scope = new Scope("code-cache-child");
const { registry, plugins } = await startContextSources(
  {
    cwd: folder,
    plugins: [folder],
    builtins: false,
    watch: false,
    logger: silentLogger,
    ...(modes.includes("shared") ? { dedicatedWorkers: 0 } : {}),
  },
  scope,
);
const generation = await SystemContext.initialize(await registry.compose({ location: folder }));
if (modes.includes("wait") && plugins.failures().length === 0) {
  for (;;) {
    const now = codeCache();
    if (now !== undefined && (before === undefined || !now.equals(before))) break;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
const failures = plugins.failures().map(({ diagnostic }) => diagnostic.message);
const result = { plugins: plugins.plugins().length, failures, hasBaseline: generation.baseline.length > 0 };
process.stdout.write(`${JSON.stringify(result)}\n`);
await scope.close();
