// A host that loads the installed plugin package by name (its settings from
// context-host.json), then sees it updated the way `npm update` replaces a package: to a
// newer version (its plugin reloads), then to one whose peer range this host does not
// meet (its plugin is unloaded, with a diagnostic). Prints what it saw as JSON.
// Usage: node reload.mjs DATA_DIR NEWER_TARBALL INCOMPATIBLE_TARBALL (from this folder)

import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import path from "node:path";
import { createHost, scriptedProvider } from "context-host";

const [dataDir, newer, incompatible] = process.argv.slice(2);
const here = import.meta.dirname;
const modules = path.join(here, "node_modules");
const settings = JSON.parse(readFileSync(path.join(here, "context-host.json"), "utf8"));

/** Replaces the installed package as npm does: the tarball unpacked beside it, then moved in. */
function npmUpdate(tarball) {
  const staging = path.join(modules, ".tides-staging");
  const retired = path.join(modules, ".tides-retired");
  mkdirSync(staging, { recursive: true });
  execFileSync("tar", ["-xzf", tarball, "-C", staging, "--strip-components=1"]);
  renameSync(path.join(modules, "context-host-plugin-tides"), retired);
  renameSync(staging, path.join(modules, "context-host-plugin-tides"));
  rmSync(retired, { recursive: true, force: true });
}

/** Waits for `condition` to hold, checking after each plugin event; fails after 30 s naming what it waited for. */
function until(host, condition, what) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`waited 30 s for ${what}`)), 30_000);
    const check = () => {
      if (!condition()) return;
      clearTimeout(timer);
      off();
      resolve();
    };
    const off = host.onPluginEvent(check);
    check();
  });
}

const plugins = (host) => host.plugins().map(({ name, generation, origin }) => ({ name, generation, version: origin.version }));

const host = await createHost({
  dataDir,
  providers: { scripted: scriptedProvider() },
  ...settings,
  instructions: { globalFile: false },
});
try {
  const id = await host.createSession({ location: here, provider: "scripted", model: "scripted-1" });
  await host.prompt(id, "When is high water?");
  const first = await host.step(id);
  const report = { baseline: first.request.system.at(-1), loaded: plugins(host) };

  npmUpdate(newer);
  await until(host, () => host.plugins()[0]?.origin.version === "1.0.1", "version 1.0.1 loaded");
  report.updated = plugins(host);
  await host.compact(id);
  await host.prompt(id, "And after the update?");
  const second = await host.step(id);
  report.updatedBaseline = second.request.system.at(-1);

  npmUpdate(incompatible);
  await until(host, () => host.plugins().length === 0, "the incompatible version unloaded");
  report.refused = host.currentDiagnostics().map((d) => ({ plugin: d.plugin, phase: d.phase, message: d.message }));
  process.stdout.write(`${JSON.stringify(report)}\n`);
} finally {
  await host.close();
}
