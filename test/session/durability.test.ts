// Durability of the session runtime on a real SQLite file: retries after a failed
// provider attempt, restarts (in process and in a real child process), two runtimes on
// one file, and corrupt snapshot rows.

import { execFile } from "node:child_process";
import { mkdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import Database from "better-sqlite3";
import { expect } from "chai";
import Type from "typebox";
import { type ProviderRequest, scriptedProvider } from "../../core/index.ts";
import { sessionsFile } from "../../core/session/store/sqlite.ts";
import { SessionCorrupt } from "../../core/session/store/store.ts";
import type { CoreSource } from "../../core/sources/core-source.ts";
import { StoreFailed } from "../../core/store.ts";
import * as SystemContext from "../../core/system-context.ts";
import { programArgs } from "../support/compiled.ts";
import { hostsPerTest, requestOf, sleep, systemUpdates, testSource, transcript } from "./fixtures.ts";

const here = path.dirname(fileURLToPath(import.meta.url));
const projectRoot = path.resolve(here, "../..");

describe("session runtime: durability", () => {
  const { folder, start, startSession, stop } = hostsPerTest();

  it("an admitted Mid-Conversation System Message stays durable when the provider fails, and the retry replays the identical request", async () => {
    const branch = testSource("core/branch", "main");
    const provider = scriptedProvider();
    const { host, id } = await startSession(provider, { core: [branch.core] });
    await host.prompt(id, "one");
    await host.step(id);

    branch.state.value = "feature";
    await host.prompt(id, "two");
    provider.failNext(1, new Error("overloaded"));
    let failure: unknown;
    await host.step(id).catch((error: unknown) => {
      failure = error;
    });
    expect(failure).to.be.instanceOf(Error).with.property("message", "overloaded");
    const failed = JSON.stringify(provider.requests.at(-1));
    expect(transcript(await host.messages(id)).slice(-2)).to.deep.equal([
      "user: two",
      "system-update: core/branch is now feature",
    ]);

    // Changes and input that arrive meanwhile wait for the following boundary.
    branch.state.value = "release";
    await host.prompt(id, "three");
    const retried = requestOf(await host.step(id));
    expect(JSON.stringify(retried)).to.equal(failed);
    expect(JSON.stringify(provider.requests.at(-1))).to.equal(failed);
    expect(systemUpdates(await host.messages(id))).to.have.length(1);

    const next = requestOf(await host.step(id));
    expect(transcript(next.messages).slice(-3)).to.deep.equal([
      "assistant: reply 2: two",
      "user: three",
      "system-update: core/branch is now release",
    ]);
  });

  it("a Mid-Conversation System Message and its Context Snapshot advance commit together: a boundary that fails to write either leaves neither", async () => {
    const branch = testSource("core/branch", "main");
    const provider = scriptedProvider();
    const { host, id } = await startSession(provider, { core: [branch.core] });
    await host.prompt(id, "one");
    await host.step(id);

    const db = new Database(sessionsFile(folder.path));
    // The stored snapshot (its entries, one row per key) and its version on the session's head.
    const storedSnapshot = () => ({
      entries: db.prepare("SELECT key, entry FROM snapshot_entries WHERE session_id = ? ORDER BY key").all(id),
      version: (db.prepare("SELECT snapshot_version FROM sessions WHERE id = ?").get(id) as { snapshot_version: number })
        .snapshot_version,
    });
    try {
      const admitted = storedSnapshot();
      branch.state.value = "feature";
      await host.prompt(id, "two");
      // The write of the message fails, then (in a second attempt) the write of the snapshot advance.
      for (const failing of [
        "CREATE TRIGGER failing BEFORE INSERT ON messages WHEN NEW.role = 'system-update' BEGIN SELECT RAISE(ABORT, 'disk full'); END",
        "CREATE TRIGGER failing BEFORE UPDATE ON snapshot_entries BEGIN SELECT RAISE(ABORT, 'disk full'); END",
        "CREATE TRIGGER failing BEFORE UPDATE OF snapshot_version ON sessions WHEN NEW.snapshot_version <> OLD.snapshot_version BEGIN SELECT RAISE(ABORT, 'disk full'); END",
      ]) {
        db.exec(failing);
        let failure: unknown;
        try {
          await host.step(id).catch((error: unknown) => {
            failure = error;
          });
        } finally {
          db.exec("DROP TRIGGER failing");
        }
        // The store's error names its file and what it was doing, and carries SQLite's error.
        expect(failure, failing).to.be.instanceOf(StoreFailed);
        expect((failure as StoreFailed).message, failing).to.match(
          /sessions\.db: commit a boundary of session .+ failed: disk full$/,
        );
        expect(((failure as StoreFailed).cause as Error).message, failing).to.equal("disk full");
        expect(transcript(await host.messages(id)), failing).to.deep.equal(["user: one", "assistant: reply 1: one"]);
        expect(storedSnapshot(), failing).to.deep.equal(admitted);
      }
      expect(provider.requests, "nothing was sent for a boundary that did not commit").to.have.length(1);

      const request = requestOf(await host.step(id));
      expect(transcript(request.messages).slice(-2)).to.deep.equal(["user: two", "system-update: core/branch is now feature"]);
      expect(storedSnapshot()).to.deep.equal({
        entries: [
          { key: "core/branch", entry: JSON.stringify({ value: "feature", removed: "core/branch (feature) no longer applies" }) },
        ],
        version: admitted.version + 1,
      });
    } finally {
      db.close();
    }
  });

  it("a retry after a restart replays the identical request", async () => {
    const branch = testSource("core/branch", "main");
    const before = scriptedProvider();
    const { host: first, id } = await startSession(before, { core: [branch.core] });
    await first.prompt(id, "one");
    await first.step(id);
    branch.state.value = "feature";
    await first.prompt(id, "two");
    before.failNext(1);
    await first.step(id).catch(() => {});
    await stop(first);

    branch.state.value = "release";
    const after = scriptedProvider();
    const second = await start({ providers: { scripted: after }, core: [branch.core] });
    requestOf(await second.step(id));
    expect(JSON.stringify(after.requests)).to.equal(JSON.stringify(before.requests.slice(-1)));
  });

  it("the host system prompt is kept with its epoch: a restart with another prompt retries the identical request, then starts a new epoch with the new prompt", async () => {
    const branch = testSource("core/branch", "main");
    const provider = scriptedProvider();
    const first = await start({ providers: { scripted: provider }, core: [branch.core], systemPrompt: "Prompt A" });
    const id = await first.createSession({ location: folder.path, provider: "scripted", model: "m" });
    await first.prompt(id, "one");
    await first.step(id);
    await first.prompt(id, "two");
    provider.failNext(1, new Error("overloaded"));
    await first.step(id).catch(() => {});
    const failed = JSON.stringify(provider.requests.at(-1));
    await stop(first);

    const second = await start({ providers: { scripted: provider }, core: [branch.core], systemPrompt: "Prompt B" });
    const retried = requestOf(await second.step(id));
    expect(JSON.stringify(retried), "the retry resends what the epoch sent").to.equal(failed);
    expect(retried.system[0]).to.equal("Prompt A");

    await second.prompt(id, "three");
    const next = requestOf(await second.step(id));
    expect(next.system).to.deep.equal(["Prompt B", "core/branch is main"]);
    expect(systemUpdates(await second.messages(id))).to.deep.equal([]);
  });

  it("after a restart the Baseline is reused byte for byte within its epoch, and a changed source arrives as a Mid-Conversation System Message", async () => {
    const branch = testSource("core/branch", "main");
    const { host: first, id } = await startSession(scriptedProvider(), { core: [branch.core] });
    await first.prompt(id, "one");
    const before = requestOf(await first.step(id));
    await stop(first);

    // New wording and a new value: a fresh rendering would differ, the admitted Baseline must not.
    branch.state.wording = "equals";
    branch.state.value = "feature";
    const second = await start({ providers: { scripted: scriptedProvider() }, core: [branch.core] });
    await second.prompt(id, "two");
    const after = requestOf(await second.step(id));
    expect(after.system).to.deep.equal(before.system);
    expect(after.system[1]).to.equal("core/branch is main");
    expect(JSON.stringify(after.messages).startsWith(JSON.stringify(before.messages).slice(0, -1))).to.equal(true);
    expect(transcript(after.messages).slice(-2)).to.deep.equal(["user: two", "system-update: core/branch equals now feature"]);
  });

  it("a new process on the same database reuses the Baseline byte for byte", async () => {
    const branch = testSource("core/branch", "main");
    const { host: first, id } = await startSession(scriptedProvider(), { core: [branch.core] });
    await first.prompt(id, "one");
    const before = requestOf(await first.step(id));
    await stop(first);

    const { stdout } = await promisify(execFile)(
      process.execPath,
      [...programArgs("test/session/step-in-child.ts"), folder.path, id, "feature", "reads", "two"],
      { cwd: projectRoot, encoding: "utf8" },
    );
    const child = JSON.parse(stdout) as ProviderRequest;
    expect(JSON.stringify(child.system)).to.equal(JSON.stringify(before.system));
    expect(transcript(child.messages)).to.deep.equal([
      "user: one",
      "assistant: reply 1: one",
      "user: two",
      "system-update: core/branch reads now feature",
    ]);

    const reopened = await start({ providers: { scripted: scriptedProvider() }, core: [branch.core] });
    expect(transcript(await reopened.messages(id)).at(-1)).to.equal("assistant: reply 1: two");
  });

  it("two runtimes stepping one session on one file admit a change exactly once and promote each prompt exactly once", async () => {
    const state = { value: "main", isArmed: false, arrived: 0, release: () => {} };
    const bothArrived = new Promise<void>((resolve) => {
      state.release = resolve;
    });
    // While armed, every loader waits until both runtimes are observing: both plan from the same revision.
    const source: CoreSource = {
      key: "core/branch",
      load: () =>
        SystemContext.make({
          key: "core/branch",
          schema: Type.String(),
          load: async () => {
            if (state.isArmed && ++state.arrived >= 2) state.release();
            if (state.isArmed) await Promise.race([bothArrived, new Promise((resolve) => setTimeout(resolve, 2000))]);
            return state.value;
          },
          baseline: (branch: string) => `branch ${branch}`,
          update: (_previous: string, branch: string) => `branch is now ${branch}`,
        }),
    };
    const providerA = scriptedProvider();
    const providerB = scriptedProvider();
    const a = await start({ providers: { scripted: providerA }, core: [source] });
    const b = await start({ providers: { scripted: providerB }, core: [source] });
    const id = await a.createSession({ location: folder.path, provider: "scripted", model: "m" });
    await a.prompt(id, "one");
    await a.step(id);

    state.value = "feature";
    await a.prompt(id, "two");
    await b.prompt(id, "three");
    state.isArmed = true;
    const results = await Promise.all([a.step(id), b.step(id)]);
    expect(state.arrived, "both runtimes observed the sources").to.equal(2);

    const messages = await a.messages(id);
    expect(transcript(messages)).to.have.length(6);
    expect(transcript(messages).slice(0, 5)).to.deep.equal([
      "user: one",
      "assistant: reply 1: one",
      "user: two",
      "user: three",
      "system-update: branch is now feature",
    ]);
    expect(messages[5]!.role).to.equal("assistant");
    expect(messages.map((m) => m.seq)).to.deep.equal([1, 2, 3, 4, 5, 6]);
    // Whoever sent, sent the one admitted request.
    const sent = [...providerA.requests.slice(1), ...providerB.requests].map((r) => JSON.stringify(r));
    expect(sent.length).to.be.greaterThan(0);
    expect(new Set(sent).size).to.equal(1);
    expect(results.filter((r) => r.kind === "replied").length).to.equal(sent.length);
    expect(await b.step(id)).to.deep.equal({ kind: "idle" });
  });

  it("a move or switch asked for while a provider call is in flight keeps that call's reply durable", async () => {
    const branch = testSource("core/branch", "main");
    let answer = () => {};
    const answered = new Promise<void>((resolve) => {
      answer = resolve;
    });
    const provider = scriptedProvider([
      async () => {
        await answered;
        return { text: "slow reply" };
      },
    ]);
    const { host, id } = await startSession(provider, { core: [branch.core] });
    await host.prompt(id, "one");
    const stepping = host.step(id);
    while (provider.requests.length === 0) await sleep(1);
    const elsewhere = path.join(folder.path, "elsewhere");
    mkdirSync(elsewhere);
    await host.move(id, elsewhere);
    await host.switchModel(id, { model: "m2" });
    answer();
    await stepping;

    expect(transcript(await host.messages(id))).to.deep.equal(["user: one", "assistant: slow reply"]);
    expect(await host.step(id), "nothing awaits a reply: no resend").to.deep.equal({ kind: "idle" });
    expect(provider.requests).to.have.length(1);
  });

  it("a corrupt Context Snapshot row is a SessionCorrupt error naming the session, not a crash and not a silent reset", async () => {
    const branch = testSource("core/branch", "main");
    const provider = scriptedProvider();
    const host = await start({ providers: { scripted: provider }, core: [branch.core] });
    // Each replaces the epoch's snapshot entries (one row per key) with these rows.
    const corruptions: ReadonlyArray<ReadonlyArray<readonly [key: string, entry: string]>> = [
      [["core/branch", "{not json"]],
      [["__proto__", '{"value":"main"}']],
      [["branch", '{"value":"main"}']],
      [["core/branch", '{"value":{"__proto__":{"isPolluted":true}}}']],
      [["core/branch", '"main"']],
    ];
    const db = new Database(sessionsFile(folder.path));
    const entriesOf = (id: string) =>
      db.prepare("SELECT key, entry FROM snapshot_entries WHERE session_id = ? ORDER BY key").all(id);
    try {
      for (const rows of corruptions) {
        const corruption = JSON.stringify(rows);
        const id = await host.createSession({ location: folder.path, provider: "scripted", model: "m" });
        await host.prompt(id, "one");
        await host.step(id);
        // Written as another process would (its snapshot_version advanced), so the host reads it again.
        db.transaction(() => {
          db.prepare("DELETE FROM snapshot_entries WHERE session_id = ?").run(id);
          for (const [key, entry] of rows)
            db.prepare("INSERT INTO snapshot_entries (session_id, epoch, key, entry) VALUES (?, 1, ?, ?)").run(id, key, entry);
          db.prepare("UPDATE sessions SET snapshot_version = snapshot_version + 1 WHERE id = ?").run(id);
        })();
        const before = await host.messages(id);
        const sentBefore = provider.requests.length;

        branch.state.value = "feature";
        await host.prompt(id, "two");
        let failure: unknown;
        await host.step(id).catch((error: unknown) => {
          failure = error;
        });
        branch.state.value = "main";

        expect(failure, corruption).to.be.instanceOf(SessionCorrupt);
        expect((failure as SessionCorrupt).sessionId).to.equal(id);
        expect((failure as Error).message, corruption)
          .to.include(id)
          .and.to.include("Context Snapshot");
        expect(await host.messages(id), corruption).to.deep.equal(before);
        expect(provider.requests.length).to.equal(sentBefore);
        expect(entriesOf(id), "the rows are neither repaired nor replaced").to.deep.equal(
          rows.map(([key, entry]) => ({ key, entry })).sort((a, b) => (a.key < b.key ? -1 : 1)),
        );
      }
      expect(({} as Record<string, unknown>).isPolluted).to.equal(undefined);
    } finally {
      db.close();
    }
  });
});
