// Context Epochs on a real SQLite file: compaction, model/provider switch and location
// move each start a new epoch with a fresh Baseline while durable history is kept.

import { mkdirSync } from "node:fs";
import path from "node:path";
import { expect } from "chai";
import { scriptedProvider } from "../../core/index.ts";
import { SqliteSessionStore, sessionsFile } from "../../core/session/store/sqlite.ts";
import * as SystemContext from "../../core/system-context.ts";
import { hostsPerTest, locationSource, requestOf, systemUpdates, testSource, transcript } from "./fixtures.ts";

describe("session runtime: Context Epochs", () => {
  const { folder, start, startSession } = hostsPerTest();

  /** The active epoch as stored, read through a second store on the same file. */
  async function activeEpoch(id: string) {
    const store = new SqliteSessionStore(sessionsFile(folder.path));
    try {
      return await store.activeEpoch(id);
    } finally {
      await store.close();
    }
  }

  it("after compaction earlier Mid-Conversation System Messages stay durable but leave projected history, and the next boundary starts a new epoch with a fresh Baseline", async () => {
    const branch = testSource("core/branch", "main");
    const provider = scriptedProvider();
    const { host, id } = await startSession(provider, { core: [branch.core] });
    await host.prompt(id, "one");
    const first = requestOf(await host.step(id));
    branch.state.value = "feature";
    await host.prompt(id, "two");
    const second = requestOf(await host.step(id));
    expect(transcript(second.messages).at(-1)).to.equal("system-update: core/branch is now feature");

    await host.compact(id);
    const summarising = provider.requests.at(-1)!;
    // The summary is asked for over the projected history of the current epoch.
    expect(summarising.system).to.deep.equal(first.system);
    expect(transcript(summarising.messages).slice(0, -1)).to.deep.equal([
      ...transcript(second.messages),
      "assistant: reply 2: two",
    ]);
    const summary = `summary: ${(await host.messages(id)).at(-1)!.text}`;
    expect(summary).to.match(/^summary: reply 3: Summarize the conversation/);
    expect(await host.step(id), "a summary is not input: nothing to reply to").to.deep.equal({ kind: "idle" });

    branch.state.value = "release";
    await host.prompt(id, "three");
    const third = requestOf(await host.step(id));
    expect(third.system).to.deep.equal(["You are a test agent.", "core/branch is release"]);
    expect(transcript(third.messages)).to.deep.equal([summary, "user: three"]);

    const messages = await host.messages(id);
    expect(systemUpdates(messages).map((m) => [m.text, m.epoch])).to.deep.equal([["core/branch is now feature", 1]]);
    expect(messages.at(-2)).to.include({ role: "user", text: "three", epoch: 2 });
    expect(await activeEpoch(id)).to.deep.include({ number: 2, reason: "compaction", baseline: "core/branch is release" });

    // The new epoch goes on with chronological updates of its own.
    branch.state.value = "hotfix";
    await host.prompt(id, "four");
    const fourth = requestOf(await host.step(id));
    expect(transcript(fourth.messages).slice(-2)).to.deep.equal(["user: four", "system-update: core/branch is now hotfix"]);
    expect(fourth.system).to.deep.equal(third.system);
  });

  it("compaction stores a freshly initialized Context Snapshot with its fresh Baseline: the next boundary compares against what the new Baseline shows", async () => {
    const branch = testSource("core/branch", "main");
    const provider = scriptedProvider();
    const { host, id } = await startSession(provider, { core: [branch.core] });
    await host.prompt(id, "one");
    await host.step(id);
    branch.state.value = "feature";
    await host.prompt(id, "two");
    await host.step(id);

    await host.compact(id);
    // Changed after the last admitted update: only a fresh observation knows it.
    branch.state.value = "release";
    await host.prompt(id, "three");
    expect(requestOf(await host.step(id)).system[1]).to.equal("core/branch is release");
    expect(await activeEpoch(id)).to.deep.include({
      number: 2,
      reason: "compaction",
      snapshot: { "core/branch": { value: "release", removed: "core/branch (release) no longer applies" } },
    });

    // Nothing changed since the new Baseline: no update, not even a restatement of "release".
    await host.prompt(id, "four");
    expect(transcript(requestOf(await host.step(id)).messages).at(-1)).to.equal("user: four");
    expect(systemUpdates(await host.messages(id)).map((m) => [m.text, m.epoch])).to.deep.equal([
      ["core/branch is now feature", 1],
    ]);
  });

  it("a due epoch transition blocked by unavailable admitted context keeps the current epoch until it can replace it", async () => {
    const branch = testSource("core/branch", "main");
    const provider = scriptedProvider();
    const { host, id } = await startSession(provider, { core: [branch.core] });
    await host.prompt(id, "one");
    const first = requestOf(await host.step(id));

    await host.switchModel(id, { model: "m2" });
    branch.state.value = SystemContext.unavailable;
    await host.prompt(id, "two");
    const blocked = requestOf(await host.step(id));
    expect(blocked.system, "the admitted Baseline stays while it cannot be replaced").to.deep.equal(first.system);
    expect(blocked.model).to.equal("m2");
    expect(await activeEpoch(id)).to.deep.include({ number: 1, reason: "initial" });

    branch.state.value = "feature";
    await host.prompt(id, "three");
    const replaced = requestOf(await host.step(id));
    expect(replaced.system[1]).to.equal("core/branch is feature");
    expect(await activeEpoch(id)).to.deep.include({ number: 2, reason: "switch" });
    expect(systemUpdates(await host.messages(id))).to.deep.equal([]);
  });

  it("a compaction blocked by unavailable admitted context keeps projecting the epoch's history, its updates included, until the new epoch begins", async () => {
    const branch = testSource("core/branch", "main");
    const mode = testSource("core/mode", "fast");
    const provider = scriptedProvider();
    const { host, id } = await startSession(provider, { core: [branch.core, mode.core] });
    await host.prompt(id, "one");
    await host.step(id);
    mode.state.value = "slow";
    await host.prompt(id, "two");
    const updated = requestOf(await host.step(id));
    expect(transcript(updated.messages)).to.include("system-update: core/mode is now slow");

    await host.compact(id);
    branch.state.value = SystemContext.unavailable;
    await host.prompt(id, "three");
    const blocked = requestOf(await host.step(id));
    expect(blocked.system, "the epoch goes on").to.deep.equal(updated.system);
    expect(
      transcript(blocked.messages).slice(0, updated.messages.length),
      "the admitted update is still projected",
    ).to.deep.equal(transcript(updated.messages));
    expect(transcript(blocked.messages).some((line) => line.startsWith("summary:"))).to.equal(false);

    branch.state.value = "main";
    await host.prompt(id, "four");
    const compacted = requestOf(await host.step(id));
    expect(compacted.messages[0]?.role).to.equal("summary");
    expect(compacted.system[1]).to.equal("core/branch is main\n\ncore/mode is slow");
  });

  it("an admitted source that cannot be carried forward replaces the epoch at the boundary, unless admitted context is unavailable", async () => {
    const editor = testSource("core/editor", "vim", { isRemovable: false });
    const branch = testSource("core/branch", "main");
    const provider = scriptedProvider();
    const { host, id } = await startSession(provider, { core: [editor.core, branch.core] });
    await host.prompt(id, "one");
    const first = requestOf(await host.step(id));
    expect(first.system[1]).to.equal("core/editor is vim\n\ncore/branch is main");

    // Gone without removal text: only a fresh Baseline can say so, and the unavailable branch blocks it.
    editor.state.value = SystemContext.absent;
    branch.state.value = SystemContext.unavailable;
    await host.prompt(id, "two");
    expect(requestOf(await host.step(id)).system).to.deep.equal(first.system);
    expect(await activeEpoch(id)).to.deep.include({ number: 1, reason: "initial" });

    branch.state.value = "feature";
    await host.prompt(id, "three");
    const replaced = requestOf(await host.step(id));
    expect(replaced.system[1]).to.equal("core/branch is feature");
    expect(transcript(replaced.messages)).to.deep.equal([
      "user: one",
      "assistant: reply 1: one",
      "user: two",
      "assistant: reply 2: two",
      "user: three",
    ]);
    expect(await activeEpoch(id)).to.deep.include({ number: 2, reason: "replacement" });
    expect(systemUpdates(await host.messages(id))).to.deep.equal([]);
  });

  it("a model/provider switch starts a new epoch at the next boundary while chronological history is preserved", async () => {
    const branch = testSource("core/branch", "main");
    const first = scriptedProvider();
    const second = scriptedProvider();
    const host = await start({ providers: { first, second }, core: [branch.core] });
    const id = await host.createSession({ location: folder.path, provider: "first", model: "small" });
    await host.prompt(id, "one");
    await host.step(id);
    branch.state.value = "feature";
    await host.prompt(id, "two");
    await host.step(id);

    branch.state.value = "release";
    await host.switchModel(id, { provider: "second", model: "large" });
    expect(second.requests, "a switch sends nothing by itself").to.have.length(0);
    await host.prompt(id, "three");
    const request = requestOf(await host.step(id));

    expect(first.requests).to.have.length(2);
    expect(second.requests).to.have.length(1);
    expect(request).to.deep.include({ provider: "second", model: "large" });
    expect(request.system[1]).to.equal("core/branch is release");
    // Conversation history stays; the earlier epoch's update is folded into the fresh Baseline.
    expect(transcript(request.messages)).to.deep.equal([
      "user: one",
      "assistant: reply 1: one",
      "user: two",
      "assistant: reply 2: two",
      "user: three",
    ]);
    const messages = await host.messages(id);
    expect(systemUpdates(messages).map((m) => m.text)).to.deep.equal(["core/branch is now feature"]);
    expect(await activeEpoch(id)).to.deep.include({ number: 2, reason: "switch" });
  });

  it("a location move starts a new epoch and location-scoped sources re-resolve in the destination", async () => {
    const from = path.join(folder.path, "from");
    const to = path.join(folder.path, "to");
    mkdirSync(from);
    mkdirSync(to);
    const provider = scriptedProvider();
    const host = await start({ providers: { scripted: provider }, core: [locationSource] });
    const id = await host.createSession({ location: from, provider: "scripted", model: "m" });
    await host.prompt(id, "one");
    expect(requestOf(await host.step(id)).system[1]).to.equal(`working folder: ${from}`);

    await host.move(id, to);
    await host.prompt(id, "two");
    const request = requestOf(await host.step(id));
    expect(request.system[1]).to.equal(`working folder: ${to}`);
    expect(transcript(request.messages)).to.deep.equal(["user: one", "assistant: reply 1: one", "user: two"]);
    expect(systemUpdates(await host.messages(id))).to.deep.equal([]);
    expect(await activeEpoch(id)).to.deep.include({ number: 2, reason: "move" });
  });
});
