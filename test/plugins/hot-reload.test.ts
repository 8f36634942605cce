// Hot reload through the real watcher: edits, imported files, identical saves,
// added and deleted plugins, editors that save by rename, failed reloads that keep
// the last good generation, stale results, and a close that releases everything.

import fs from "node:fs";
import path from "node:path";
import { expect } from "chai";
import { Diagnostics } from "../../core/base/diagnostics.ts";
import * as SystemContext from "../../core/system-context.ts";
import {
  baselineOf,
  eventually,
  generationOf,
  logLines,
  saveByRename,
  sleep,
  textPlugin,
  usePluginHarness,
  write,
} from "./harness.ts";

/** Active file watchers of this process (chokidar uses `fs.watch`). */
const fileWatchers = () => process.getActiveResourcesInfo().filter((resource) => resource === "FSEventWrap").length;

/** A plugin `notes` whose one source `notes/word` renders the `word` exported by the module at `from`. */
function wordPlugin(from: string): string {
  return `import { definePlugin } from "context-host";
import Type from "typebox";
import { word } from ${JSON.stringify(from)};

export default definePlugin({
  name: "notes",
  setup(api) {
    api.source({
      key: "notes/word",
      schema: Type.String(),
      load: () => word,
      baseline: (value) => "Word: " + value,
      update: (_previous, value) => "Word is now " + value,
    });
  },
});
`;
}

describe("Plugin host: hot reload", () => {
  const harness = usePluginHarness();

  it("editing a plugin's entry file activates a new generation serving the new content", async () => {
    const folder = harness.tempFolder();
    const file = write(path.join(folder, "notes.ts"), textPlugin({ name: "notes", value: "first" }));
    const running = await harness.start({ folders: [folder] });
    expect(generationOf(running, "notes")).to.equal(1);
    write(file, textPlugin({ name: "notes", value: "second" }));
    await eventually(() => generationOf(running, "notes") === 2, "generation 2 of notes");
    expect((await baselineOf(running)).baseline).to.equal("notes: second");
    expect(running.events).to.deep.include({ kind: "activated", plugin: "notes", file, generation: 2 });
  });

  it("an activation says where its load's time went: bundle, evaluate and setup in the worker, then the swap", async () => {
    const folder = harness.tempFolder();
    const file = write(path.join(folder, "notes.ts"), textPlugin({ name: "notes", value: "first" }));
    const running = await harness.start({ folders: [folder] });
    write(file, textPlugin({ name: "notes", value: "second" }));
    await eventually(() => generationOf(running, "notes") === 2, "generation 2 of notes");
    const spent = running.timings.at(-1);
    const parts = [spent?.bundleMs, spent?.evaluateMs, spent?.setupMs, spent?.swapMs];
    for (const part of parts) expect(part).to.be.a("number").and.at.least(0);
    const sum = parts.reduce((total: number, part) => total + (part ?? 0), 0);
    // The parts follow one another; the total holds them all (hundredths rounded).
    expect(spent?.loadMs).to.be.at.least(sum - 0.05);
    expect(running.host.plugins()[0]?.loadMs).to.be.a("number");
  });

  it("a reload surfaces at the next boundary as a Mid-Conversation System Message, not before", async () => {
    const folder = harness.tempFolder();
    const file = write(path.join(folder, "notes.ts"), textPlugin({ name: "notes", value: "first" }));
    const running = await harness.start({ folders: [folder] });
    const generation = await baselineOf(running);
    write(file, textPlugin({ name: "notes", value: "second" }));
    await eventually(() => generationOf(running, "notes") === 2, "generation 2 of notes");
    const result = await SystemContext.reconcile(
      await running.registry.compose({ location: running.location }),
      generation.snapshot,
    );
    expect(result).to.deep.equal({
      kind: "updated",
      text: "notes is now second",
      snapshot: { "notes/status": { value: "second" } },
      change: { written: ["notes/status"], removed: [] },
    });
  });

  it("editing a local file the plugin imports reloads the plugin", async () => {
    const folder = harness.tempFolder();
    const words = write(path.join(folder, "notes", "words.ts"), `export const word = "apple";\n`);
    write(path.join(folder, "notes", "index.ts"), wordPlugin("./words.ts"));
    const running = await harness.start({ folders: [folder] });
    expect((await baselineOf(running)).baseline).to.equal("Word: apple");
    write(words, `export const word = "banana";\n`);
    await eventually(() => generationOf(running, "notes") === 2, "generation 2 of notes");
    expect((await baselineOf(running)).baseline).to.equal("Word: banana");
  });

  it("editing an imported file outside the plugin folder reloads the plugin too", async () => {
    const folder = harness.tempFolder();
    const elsewhere = harness.tempFolder("context-host-shared-");
    const shared = write(path.join(elsewhere, "shared.ts"), `export const word = "apple";\n`);
    write(path.join(folder, "notes.ts"), wordPlugin(shared));
    const running = await harness.start({ folders: [folder] });
    write(shared, `export const word = "cherry";\n`);
    await eventually(() => generationOf(running, "notes") === 2, "generation 2 of notes");
    expect((await baselineOf(running)).baseline).to.equal("Word: cherry");
  });

  it("saving identical content does not reload: the generation stays", async () => {
    const folder = harness.tempFolder();
    const content = textPlugin({ name: "steady", value: "same" });
    const file = write(path.join(folder, "steady.ts"), content);
    const sentinel = write(path.join(folder, "sentinel.ts"), textPlugin({ name: "sentinel", value: "1" }));
    const running = await harness.start({ folders: [folder] });
    write(file, content);
    saveByRename(file, content);
    // The sentinel, saved after, shows the watcher has delivered the identical saves too.
    write(sentinel, textPlugin({ name: "sentinel", value: "2" }));
    await eventually(() => generationOf(running, "sentinel") === 2, "generation 2 of the sentinel");
    await sleep(150);
    await running.host.settled();
    expect(generationOf(running, "steady")).to.equal(1);
    expect(running.events.filter((e) => e.kind === "activated" && e.plugin === "steady")).to.deep.equal([]);
  });

  it("an explicit reload of unchanged content keeps the generation", async () => {
    const folder = harness.tempFolder();
    const file = write(path.join(folder, "steady.ts"), textPlugin({ name: "steady", value: "same" }));
    const running = await harness.start({ folders: [folder], watch: false });
    await running.host.reload(file);
    expect(generationOf(running, "steady")).to.equal(1);
    expect(running.events).to.deep.equal([]);
  });

  it("a new plugin file adds a plugin", async () => {
    const folder = harness.tempFolder();
    write(path.join(folder, "first.ts"), textPlugin({ name: "first", value: "1" }));
    const running = await harness.start({ folders: [folder] });
    const file = write(path.join(folder, "second.ts"), textPlugin({ name: "second", value: "2" }));
    await eventually(() => generationOf(running, "second") === 1, "the new plugin to load");
    expect((await baselineOf(running)).baseline).to.equal("first: 1\n\nsecond: 2");
    expect(running.events).to.deep.include({ kind: "activated", plugin: "second", file, generation: 1 });
  });

  it("a new folder plugin adds a plugin once its index.ts appears", async () => {
    const folder = harness.tempFolder();
    const running = await harness.start({ folders: [folder] });
    write(path.join(folder, "later", "index.ts"), textPlugin({ name: "later", value: "arrived" }));
    await eventually(() => generationOf(running, "later") === 1, "the folder plugin to load");
    expect((await baselineOf(running)).baseline).to.equal("later: arrived");
  });

  it("deleting a plugin file removes the plugin, its sources, and runs its disposers", async () => {
    const folder = harness.tempFolder();
    const log = path.join(folder, "lifecycle.log");
    write(path.join(folder, "keep.ts"), textPlugin({ name: "keep", value: "kept" }));
    const file = write(path.join(folder, "gone.ts"), textPlugin({ name: "gone", value: "here", log }));
    const running = await harness.start({ folders: [folder] });
    fs.rmSync(file);
    await eventually(() => generationOf(running, "gone") === undefined, "the deleted plugin to be removed");
    expect(running.registry.state.registrations.map((r) => r.key)).to.deep.equal(["keep/status"]);
    expect((await baselineOf(running)).baseline).to.equal("keep: kept");
    await eventually(() => logLines(log).includes("dispose here"), "the disposer to run");
    expect(logLines(log)).to.deep.equal(["setup here", "dispose here"]);
    expect(running.events).to.deep.include({ kind: "removed", plugin: "gone", file });
  });

  it("a folder plugin deleted and created again is loaded and watched again", async () => {
    const folder = harness.tempFolder();
    const index = write(path.join(folder, "phoenix", "index.ts"), textPlugin({ name: "phoenix", value: "v1" }));
    const running = await harness.start({ folders: [folder] });
    fs.rmSync(path.join(folder, "phoenix"), { recursive: true });
    await eventually(() => generationOf(running, "phoenix") === undefined, "the deleted folder plugin to be removed");
    write(index, textPlugin({ name: "phoenix", value: "v2" }));
    await eventually(() => generationOf(running, "phoenix") !== undefined, "the folder plugin to come back");
    expect((await baselineOf(running)).baseline).to.equal("phoenix: v2");
    write(index, textPlugin({ name: "phoenix", value: "v3" }));
    await eventually(async () => (await baselineOf(running)).baseline === "phoenix: v3", "an edit of the returned plugin");
  });

  it("a removed source emits its removal text at the next boundary", async () => {
    const folder = harness.tempFolder();
    const file = write(
      path.join(folder, "gone.ts"),
      textPlugin({ name: "gone", value: "here" }).replace(
        "update: (_previous, value) =>",
        `removed: (value) => "gone no longer applies (was " + value + ")",\n      update: (_previous, value) =>`,
      ),
    );
    const running = await harness.start({ folders: [folder] });
    const generation = await baselineOf(running);
    fs.rmSync(file);
    await eventually(() => running.registry.state.registrations.length === 0, "the source to leave the registry");
    const result = await SystemContext.reconcile(
      await running.registry.compose({ location: running.location }),
      generation.snapshot,
    );
    expect(result).to.deep.equal({
      kind: "updated",
      text: "gone no longer applies (was here)",
      snapshot: {},
      change: { written: [], removed: ["gone/status"] },
    });
  });

  it("an editor's save by rename over the file reloads the plugin, every time", async () => {
    const folder = harness.tempFolder();
    const file = write(path.join(folder, "edited.ts"), textPlugin({ name: "edited", value: "v1" }));
    const running = await harness.start({ folders: [folder] });
    for (const version of [2, 3, 4]) {
      saveByRename(file, textPlugin({ name: "edited", value: `v${version}` }));
      await eventually(() => generationOf(running, "edited") === version, `generation ${version} after a rename save`);
      expect((await baselineOf(running)).baseline).to.equal(`edited: v${version}`);
    }
    expect(running.host.diagnostics).to.deep.equal([]);
  });

  it("an editor's save in place (the file emptied, then written) reloads once, with no diagnostic for the empty file", async () => {
    const folder = harness.tempFolder();
    const file = write(path.join(folder, "edited.ts"), textPlugin({ name: "edited", value: "v1" }));
    // A quiet time long enough that the second write lands inside it on a loaded machine.
    const running = await harness.start({ folders: [folder], debounceMs: 200 });
    fs.writeFileSync(file, "");
    // Time for the first event's load to read the empty file.
    await sleep(150);
    fs.writeFileSync(file, textPlugin({ name: "edited", value: "v2" }));
    await eventually(() => generationOf(running, "edited") === 2, "generation 2 after a save in place");
    // Past the quiet re-check (400 ms after the last event): it finds nothing new.
    await sleep(500);
    expect(generationOf(running, "edited")).to.equal(2);
    expect((await baselineOf(running)).baseline).to.equal("edited: v2");
    expect(running.host.diagnostics).to.deep.equal([]);
    expect(running.events.filter((event) => event.kind !== "activated")).to.deep.equal([]);
  });

  it("renaming a plugin's namespace swaps its sources over in one version", async () => {
    const folder = harness.tempFolder();
    const file = write(path.join(folder, "renamed.ts"), textPlugin({ name: "before", value: "x" }));
    const running = await harness.start({ folders: [folder] });
    const seen: string[][] = [];
    running.registry.subscribe((state) => seen.push(state.registrations.map((r) => r.key)));
    write(file, textPlugin({ name: "after", value: "x" }));
    await eventually(() => generationOf(running, "after") === 2, "the renamed plugin");
    expect(seen).to.deep.equal([["before/status"], ["after/status"]]);
  });
});

describe("Plugin host: failed reloads and stale results", () => {
  const harness = usePluginHarness();

  it("an edit that breaks the plugin keeps the last good generation serving; fixing it activates a new one", async () => {
    const folder = harness.tempFolder();
    const file = write(path.join(folder, "fragile.ts"), textPlugin({ name: "fragile", value: "good" }));
    const running = await harness.start({ folders: [folder] });
    write(file, `${textPlugin({ name: "fragile", value: "broken" })}\nexport const = ;\n`);
    await eventually(() => running.host.failures().length === 1, "the failed reload");
    expect(running.host.failures()[0]?.diagnostic.phase).to.equal("bundle");
    expect(generationOf(running, "fragile")).to.equal(1);
    expect((await baselineOf(running)).baseline).to.equal("fragile: good");
    write(file, textPlugin({ name: "fragile", value: "fixed" }));
    await eventually(() => (generationOf(running, "fragile") ?? 0) > 1, "the fixed generation");
    expect((await baselineOf(running)).baseline).to.equal("fragile: fixed");
    expect(running.host.failures()).to.deep.equal([]);
  });

  for (const [how, restore] of [
    ["the last good file restored (an editor's undo)", (good: string) => good],
    // The bundle leaves comments out; one at the end of a line moves nothing in its source map either.
    ["the last good file with a comment added", (good: string) => `${good.trimEnd()} // as it was\n`],
  ] as const) {
    it(`a broken save followed by ${how} clears the problem and says "back to generation 1"`, async () => {
      const folder = harness.tempFolder();
      const diagnostics = new Diagnostics();
      const good = textPlugin({ name: "fragile", value: "good" });
      const file = write(path.join(folder, "fragile.ts"), good);
      const running = await harness.start({ folders: [folder], diagnostics });
      write(file, `${good}\nexport const = ;\n`);
      await eventually(() => running.host.failures().length === 1, "the failed reload");
      expect(diagnostics.current().map((d) => d.phase)).to.deep.equal(["bundle"]);
      write(file, restore(good));
      await eventually(() => running.events.some((e) => e.kind === "restored"), "the restored event");
      expect(running.events.at(-1)).to.deep.equal({ kind: "restored", plugin: "fragile", file, generation: 1 });
      expect(running.host.failures()).to.deep.equal([]);
      expect(diagnostics.current()).to.deep.equal([]);
      expect(generationOf(running, "fragile")).to.equal(1);
      expect((await baselineOf(running)).baseline).to.equal("fragile: good");
    });
  }

  it("an edit whose setup throws keeps the last good generation and its disposers unrun", async () => {
    const folder = harness.tempFolder();
    const log = path.join(folder, "lifecycle.log");
    const file = write(path.join(folder, "fragile.ts"), textPlugin({ name: "fragile", value: "good", log }));
    const running = await harness.start({ folders: [folder] });
    write(
      file,
      textPlugin({ name: "fragile", value: "bad" }).replace("api.source({", 'throw new Error("no luck");\n    api.source({'),
    );
    await eventually(() => running.host.failures().length === 1, "the failed reload");
    expect(running.host.failures()[0]?.diagnostic).to.include({ phase: "setup", plugin: "fragile" });
    expect(generationOf(running, "fragile")).to.equal(1);
    expect((await baselineOf(running)).baseline).to.equal("fragile: good");
    expect(logLines(log)).to.deep.equal(["setup good"]);
  });

  it("a slow setup of an older version is discarded when a newer version arrives during it", async () => {
    const { file, log, running } = await startSlow(harness, false);
    write(file, textPlugin({ name: "slow", value: "A", log, setupDelayMs: 200 }));
    const loadingA = running.host.reload(file);
    await eventually(() => logLines(log).includes("setup A"), "setup of version A to start");
    write(file, textPlugin({ name: "slow", value: "B", log }));
    const loadingB = running.host.reload(file);
    await Promise.all([loadingA, loadingB]);
    expect((await baselineOf(running)).baseline).to.equal("slow: B");
    expect(running.events.filter((e) => e.kind === "activated")).to.deep.equal([
      { kind: "activated", plugin: "slow", file, generation: 3 },
    ]);
    expect(logLines(log)).to.have.members(["setup v0", "setup A", "dispose A", "setup B", "dispose v0"]);
    expect(logLines(log)).to.have.length(5);
  });

  it("through the watcher, a quick save after a slow one ends with the newer version active, never the older after it", async () => {
    const { file, log, running } = await startSlow(harness);
    write(file, textPlugin({ name: "slow", value: "A", log, setupDelayMs: 300 }));
    await eventually(() => logLines(log).includes("setup A"), "setup of version A to start");
    write(file, textPlugin({ name: "slow", value: "B", log }));
    await eventually(async () => (await baselineOf(running)).baseline === "slow: B", "version B to serve");
    // Outlast A's setup and the watcher's re-check, then look again.
    await sleep(400);
    await running.host.settled();
    expect((await baselineOf(running)).baseline).to.equal("slow: B");
    const activations = running.events.filter((e) => e.kind === "activated");
    expect(activations.at(-1)).to.deep.equal({
      kind: "activated",
      plugin: "slow",
      file,
      generation: generationOf(running, "slow"),
    });
    expect(running.host.plugins()).to.have.length(1);
    expect(logLines(log).filter((line) => line === "dispose A")).to.have.length(1);
  });

  it("a reload asked for again during a slow load of the same content swaps that load's generation in, set up once", async () => {
    const { file, log, running } = await startSlow(harness, false);
    write(file, textPlugin({ name: "slow", value: "A", log, setupDelayMs: 200 }));
    const first = running.host.reload(file);
    await eventually(() => logLines(log).includes("setup A"), "setup of version A to start");
    await Promise.all([first, running.host.reload(file)]);
    expect(running.events.filter((e) => e.kind === "activated").map((e) => e.generation)).to.deep.equal([2]);
    expect((await baselineOf(running)).baseline).to.equal("slow: A");
    expect(logLines(log)).to.deep.equal(["setup v0", "setup A", "dispose v0"]);
  });

  it("a save whose quiet re-check overtakes its slow load is one new generation, set up once (the overtaken one is kept)", async () => {
    // The watcher's quiet re-check comes 100 ms after the save's last event, while the load
    // its first event started is still in setup: the re-check finds the same content.
    const { file, log, running } = await startSlow(harness);
    write(file, textPlugin({ name: "slow", value: "A", log, setupDelayMs: 400 }));
    await eventually(async () => (await baselineOf(running)).baseline === "slow: A", "version A to serve");
    await running.host.settled();
    expect(running.events.filter((e) => e.kind === "activated").map((e) => e.generation)).to.deep.equal([2]);
    expect(generationOf(running, "slow")).to.equal(2);
    expect(logLines(log)).to.deep.equal(["setup v0", "setup A", "dispose v0"]);
  });
});

describe("Plugin host: close", () => {
  const harness = usePluginHarness();

  it("close empties the registry and runs every generation's disposers once", async () => {
    const folder = harness.tempFolder();
    const log = path.join(folder, "lifecycle.log");
    write(path.join(folder, "one.ts"), textPlugin({ name: "one", value: "1", log }));
    write(path.join(folder, "two", "index.ts"), textPlugin({ name: "two", value: "2", log }));
    const running = await harness.start({ folders: [folder] });
    await running.host.close();
    expect(running.registry.state.registrations).to.deep.equal([]);
    expect(running.host.plugins()).to.deep.equal([]);
    expect(
      logLines(log)
        .filter((line) => line.startsWith("dispose"))
        .sort(),
    ).to.deep.equal(["dispose 1", "dispose 2"]);
  });

  it("after close, later writes, new files and deletions cause no events and no loads", async () => {
    const folder = harness.tempFolder();
    const log = path.join(folder, "lifecycle.log");
    const file = write(path.join(folder, "one.ts"), textPlugin({ name: "one", value: "1", log }));
    const running = await harness.start({ folders: [folder] });
    await running.host.close();
    const version = running.registry.state.version;
    write(file, textPlugin({ name: "one", value: "changed", log }));
    write(path.join(folder, "new.ts"), textPlugin({ name: "new", value: "n", log }));
    await sleep(300);
    expect(running.events.filter((e) => e.kind !== "removed")).to.deep.equal([]);
    expect(running.registry.state.version).to.equal(version);
    expect(logLines(log)).to.deep.equal(["setup 1", "dispose 1"]);
  });

  it("close releases every file watcher the host opened", async () => {
    const before = fileWatchers();
    const folder = harness.tempFolder();
    write(path.join(folder, "one.ts"), textPlugin({ name: "one", value: "1" }));
    write(path.join(folder, "two", "index.ts"), textPlugin({ name: "two", value: "2" }));
    const running = await harness.start({ folders: [folder] });
    expect(fileWatchers()).to.be.greaterThan(before);
    await running.host.close();
    // A closed fs.watch handle leaves the list once libuv has run its close callback.
    await eventually(() => fileWatchers() === before, `file watchers back to ${before}`, 1000);
  });

  it("close waits for a load in progress and leaves nothing of it behind", async () => {
    const { file, log, running } = await startSlow(harness);
    write(file, textPlugin({ name: "slow", value: "A", log, setupDelayMs: 150 }));
    await eventually(() => logLines(log).includes("setup A"), "setup of version A to start");
    await running.host.close();
    expect(running.registry.state.registrations).to.deep.equal([]);
    expect(logLines(log)).to.have.members(["setup v0", "setup A", "dispose A", "dispose v0"]);
    expect(logLines(log)).to.have.length(4);
  });

  it("closing twice is harmless", async () => {
    const folder = harness.tempFolder();
    write(path.join(folder, "one.ts"), textPlugin({ name: "one", value: "1" }));
    const running = await harness.start({ folders: [folder] });
    await Promise.all([running.host.close(), running.host.close()]);
    await running.host.close();
    expect(running.registry.state.registrations).to.deep.equal([]);
  });
});

/** A plugin "slow" at version v0 that logs its setups and disposals, and a host running it (watching unless told not to). */
async function startSlow(harness: ReturnType<typeof usePluginHarness>, watch = true) {
  const folder = harness.tempFolder();
  const log = path.join(folder, "lifecycle.log");
  const file = write(path.join(folder, "slow.ts"), textPlugin({ name: "slow", value: "v0", log }));
  return { file, log, running: await harness.start({ folders: [folder], watch }) };
}
