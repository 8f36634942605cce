// Plugin packages (decisions 130, 131): a `plugins` entry that names an installed package
// loads the plugins its package.json declares, from the host project's node_modules as
// Node resolves it; its peer range of context-host is checked against the host's version;
// an update of the package reloads its plugins. Real temp projects, real watchers.

import fs from "node:fs";
import path from "node:path";
import { expect } from "chai";
import { formatOrigin } from "../../core/host/plugin-listing.ts";
import { checkPeerRange, findPlugins, hostPackageVersion, readPluginEntry } from "../../core/plugins/find.ts";
import { installPackage, type PackageShape, updatePackage } from "../support/plugin-packages.ts";
import { baselineOf, diagnosticsLike, eventually, generationOf, textPlugin, usePluginHarness, write } from "./harness.ts";

const tides = (version: string, value: string, peer = "^1.0.0"): PackageShape => ({
  name: "context-host-plugin-tides",
  version,
  peer,
  declared: ["plugins/tides.ts"],
  files: { "plugins/tides.ts": textPlugin({ name: "tides", value }) },
});

describe("Plugin packages", () => {
  const harness = usePluginHarness();

  it("a package named in plugins loads the plugins its package.json declares, from the project's node_modules", async () => {
    const project = harness.tempFolder();
    const root = installPackage(project, tides("1.2.0", "high water at noon"));
    const running = await harness.start({ folders: ["context-host-plugin-tides"], projectRoot: project, hostVersion: "1.4.0" });
    expect((await baselineOf(running)).baseline).to.equal("tides: high water at noon");
    const [plugin] = running.host.plugins();
    expect(plugin?.origin).to.deep.equal({ kind: "package", name: "context-host-plugin-tides", version: "1.2.0", root });
    expect(plugin?.file).to.equal(path.join(root, "plugins", "tides.ts"));
    expect(formatOrigin(plugin?.origin ?? { kind: "folder", folder: "" }, project)).to.equal("context-host-plugin-tides@1.2.0");
    expect(running.host.diagnostics).to.deep.equal([]);
  });

  it("a scoped package is found from a folder below the one that has node_modules, as Node looks up the tree", async () => {
    const project = harness.tempFolder();
    installPackage(project, { ...tides("1.0.0", "ebb"), name: "@moon/tides" });
    const below = path.join(project, "packages", "app");
    fs.mkdirSync(below, { recursive: true });
    const running = await harness.start({ folders: ["@moon/tides"], projectRoot: below, hostVersion: "1.0.0" });
    expect(running.host.plugins().map((p) => formatOrigin(p.origin, below))).to.deep.equal(["@moon/tides@1.0.0"]);
  });

  it("a peer range the host's version does not satisfy is a diagnostic naming package, range and version; that package is not loaded, the rest are", async () => {
    const project = harness.tempFolder();
    installPackage(project, tides("2.0.0", "flood", "^2.0.0"));
    const folder = write(path.join(project, "plugins", "notes.ts"), textPlugin({ name: "notes", value: "kept" }));
    const running = await harness.start({
      folders: [path.dirname(folder), "context-host-plugin-tides"],
      projectRoot: project,
      hostVersion: "1.4.0",
    });
    expect(running.host.plugins().map((p) => p.name)).to.deep.equal(["notes"]);
    const [refused] = diagnosticsLike(running, { phase: "package" });
    expect(refused?.plugin).to.equal("context-host-plugin-tides");
    expect(refused?.file).to.equal(path.join(project, "node_modules", "context-host-plugin-tides", "package.json"));
    expect(refused?.message).to.equal(
      "context-host-plugin-tides@2.0.0: needs context-host ^2.0.0 (peerDependencies), but this host is context-host 1.4.0; its plugins are not loaded",
    );
    expect(running.host.failures().map((f) => f.diagnostic)).to.deep.equal([refused]);
  });

  it("a name that is neither a path nor an installed package is a diagnostic naming it, and the rest load", async () => {
    const project = harness.tempFolder();
    installPackage(project, tides("1.0.0", "neap"));
    const running = await harness.start({
      folders: ["context-host-plugin-tide", "context-host-plugin-tides"],
      projectRoot: project,
      hostVersion: "1.0.0",
    });
    expect(running.host.plugins().map((p) => p.name)).to.deep.equal(["tides"]);
    const messages = diagnosticsLike(running, { phase: "package" }).map((d) => [d.plugin, d.message]);
    expect(messages).to.deep.equal([
      [
        "context-host-plugin-tide",
        `"context-host-plugin-tide": no such file or folder in ${project}, and no installed package context-host-plugin-tide (npm i context-host-plugin-tide)`,
      ],
    ]);
  });

  it("a named package installed while the host runs loads, and its not-installed diagnostic no longer holds", async () => {
    const project = harness.tempFolder();
    fs.mkdirSync(path.join(project, "node_modules"));
    const running = await harness.start({ folders: ["context-host-plugin-tides"], projectRoot: project, hostVersion: "1.0.0" });
    expect(running.host.failures().map((f) => f.diagnostic.plugin)).to.deep.equal(["context-host-plugin-tides"]);
    installPackage(project, tides("1.0.0", "flood"));
    await eventually(() => generationOf(running, "tides") !== undefined, "the installed package loaded");
    expect(running.host.failures()).to.deep.equal([]);
    expect(diagnosticsLike(running, { phase: "package" })).to.have.length(1);
  });

  it("a package that declares no plugins, or a plugin it does not ship, is a diagnostic saying what to fix", async () => {
    const project = harness.tempFolder();
    installPackage(project, { name: "plain", version: "1.0.0", files: { "index.js": "" } });
    installPackage(project, {
      name: "partial",
      version: "3.1.0",
      declared: ["plugins/here.ts", "plugins/gone.ts", "../outside.ts"],
      files: { "plugins/here.ts": textPlugin({ name: "here", value: "present" }) },
    });
    const running = await harness.start({ folders: ["plain", "partial"], projectRoot: project, hostVersion: "1.0.0" });
    expect(running.host.plugins().map((p) => p.name)).to.deep.equal(["here"]);
    expect(diagnosticsLike(running, { phase: "package" }).map((d) => d.message)).to.deep.equal([
      'plain@1.0.0 declares no plugins: its package.json needs "context-host": { "plugins": ["plugins/x.ts"] }',
      'partial@3.1.0: "context-host".plugins names "plugins/gone.ts", which the installed package does not have (is it in "files"?)',
      'partial@3.1.0: "context-host".plugins names "../outside.ts", which is outside the package',
    ]);
  });

  it("updating the package reloads its plugins: a new version with the same files, new files, then an incompatible version and back", async () => {
    const project = harness.tempFolder();
    installPackage(project, tides("1.0.0", "low"));
    const running = await harness.start({ folders: ["context-host-plugin-tides"], projectRoot: project, hostVersion: "1.4.0" });
    expect(generationOf(running, "tides")).to.equal(1);

    // Same plugin bytes, new version: reloaded all the same (its dependencies may have changed).
    updatePackage(project, tides("1.0.1", "low"));
    await eventually(() => (generationOf(running, "tides") ?? 0) >= 2, "a new generation after the version changed");
    expect(running.host.plugins()[0]?.origin).to.include({ version: "1.0.1" });

    updatePackage(project, tides("1.1.0", "rising"));
    await eventually(async () => (await baselineOf(running)).baseline === "tides: rising", "the new files' generation");
    expect(running.host.plugins()[0]?.origin).to.include({ version: "1.1.0" });

    updatePackage(project, tides("2.0.0", "storm", "^2.0.0"));
    await eventually(() => running.host.plugins().length === 0, "the incompatible version unloaded");
    expect(running.events).to.deep.include({
      kind: "removed",
      plugin: "tides",
      file: path.join(project, "node_modules", "context-host-plugin-tides", "plugins", "tides.ts"),
    });
    expect(running.host.failures().map((f) => f.diagnostic.message)).to.deep.equal([
      "context-host-plugin-tides@2.0.0: needs context-host ^2.0.0 (peerDependencies), but this host is context-host 1.4.0; its plugins are not loaded",
    ]);

    updatePackage(project, tides("1.2.0", "calm"));
    await eventually(() => generationOf(running, "tides") !== undefined, "the compatible version loaded again");
    expect((await baselineOf(running)).baseline).to.equal("tides: calm");
    expect(running.host.failures()).to.deep.equal([]);
  });

  for (const isolation of ["worker", "none"] as const)
    it(`a package's plugin gets the dependencies the package has before the host's, but the host's context-host and TypeBox (isolation ${isolation})`, async () => {
      const project = harness.tempFolder();
      // `awilix` is a dependency of the host too: the plugin must get the package's own copy.
      installPackage(project, {
        name: "own-deps",
        version: "1.0.0",
        declared: ["plugin.ts"],
        files: {
          "node_modules/awilix/package.json": JSON.stringify({ name: "awilix", version: "0.0.1", main: "index.js" }),
          "node_modules/awilix/index.js": 'module.exports = { copy: "the package\'s own" };',
          "plugin.ts": `import { definePlugin } from "context-host";
import Type from "typebox";
import * as awilix from "awilix";

export default definePlugin({
  name: "owndeps",
  setup(api) {
    api.source({
      key: "owndeps/copy",
      schema: Type.String(),
      load: () => String((awilix as { copy?: string }).copy ?? "the host's"),
      baseline: (value) => "awilix: " + value,
      update: (_previous, value) => "awilix: " + value,
    });
  },
});
`,
        },
      });
      const running = await harness.start({ folders: ["own-deps"], projectRoot: project, hostVersion: "1.0.0", isolation });
      expect((await baselineOf(running)).baseline).to.equal("awilix: the package's own");
    });

  it("an entry reads as a path when it is written as one or exists, else as a package name", () => {
    const project = harness.tempFolder();
    fs.mkdirSync(path.join(project, "plugins"));
    expect(readPluginEntry("plugins", project)).to.deep.equal({ kind: "path", path: path.join(project, "plugins") });
    expect(readPluginEntry("./tides", project)).to.deep.equal({ kind: "path", path: path.join(project, "tides") });
    expect(readPluginEntry("/abs/tides", project)).to.deep.equal({ kind: "path", path: "/abs/tides" });
    expect(readPluginEntry("Not A Name", project)).to.deep.equal({ kind: "path", path: path.join(project, "Not A Name") });
    expect(readPluginEntry("tides", project)).to.deep.equal({ kind: "package", name: "tides" });
    expect(readPluginEntry("@moon/tides", project)).to.deep.equal({ kind: "package", name: "@moon/tides" });
  });

  it("findPlugins lists folder plugins and package plugins with their origins, in entry order, without loading any", () => {
    const project = harness.tempFolder();
    const root = installPackage(project, tides("1.0.0", "slack"));
    const notes = write(path.join(project, "plugins", "notes.ts"), "this is not even TypeScript");
    const found = findPlugins(["plugins", "context-host-plugin-tides"], project, "1.0.0");
    expect(found.plugins).to.deep.equal([
      { id: "notes", file: notes, origin: { kind: "folder", folder: path.join(project, "plugins") } },
      {
        id: "tides",
        file: path.join(root, "plugins", "tides.ts"),
        origin: { kind: "package", name: "context-host-plugin-tides", version: "1.0.0", root },
      },
    ]);
    expect(found.problems).to.deep.equal([]);
  });

  it("peer ranges are semver ranges: caret, unions and prereleases of the host; a range that is not one is refused", () => {
    expect(checkPeerRange(undefined, "0.1.0")).to.equal(undefined);
    expect(checkPeerRange("^0.1.0", "0.1.7")).to.equal(undefined);
    expect(checkPeerRange("^0.1.0", "0.2.0")).to.contain("needs context-host ^0.1.0");
    expect(checkPeerRange("^0.1.0 || ^1.0.0", "1.3.0")).to.equal(undefined);
    expect(checkPeerRange(">=0.1", "0.2.0-rc.1")).to.equal(undefined);
    expect(checkPeerRange("latest", "0.1.0")).to.equal('its peer range of context-host "latest" is not a semver range');
  });

  it("the host's version is this package's version; a host bundled away from its package.json checks no range", () => {
    const manifest = JSON.parse(fs.readFileSync(path.resolve(import.meta.dirname, "../../package.json"), "utf8"));
    expect(hostPackageVersion()).to.equal(manifest.version);
    const bundled = harness.tempFolder();
    write(path.join(bundled, "package.json"), JSON.stringify({ name: "my-agent", version: "3.0.0" }));
    expect(hostPackageVersion(bundled)).to.equal(undefined);
    expect(checkPeerRange("^0.1.0", undefined)).to.equal(undefined);
  });
});
