// The one view of a session (scripts/cli/session-view.ts): the dev terminal's model and
// the inspector's reading of a real host build the same messages, snapshot rows and
// request figures from the same session, and the cached-prefix share of a request is
// computed in one place.

import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { expect } from "chai";
import Type from "typebox";
import { createHost, type ProviderRequest, scriptedProvider } from "../../core/index.ts";
import { SqliteSessionStore, type StoredMessage } from "../../core/store.ts";
import * as SystemContext from "../../core/system-context.ts";
import { DevModelStore } from "../../scripts/cli/dev/model.ts";
import { hostInspectorSource } from "../../scripts/cli/inspector/index.ts";
import { AdmissionTimes, messageView, prefixShare } from "../../scripts/cli/session-view.ts";

describe("session view: one shape for the terminal and the page", () => {
  let folder: string;
  beforeEach(() => {
    folder = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "context-host-session-view-")));
  });
  afterEach(() => fs.rmSync(folder, { recursive: true, force: true }));

  it("the dev model and the inspector over the host show the same timeline, snapshot and request figures", async () => {
    let tide = "low";
    const tideLevel = SystemContext.make({
      key: "tide/level",
      schema: Type.String(),
      load: () => tide,
      baseline: (level: string) => `Tide: ${level}`,
      update: (_previous: string, level: string) => `Tide is now ${level}`,
    });
    const store = new SqliteSessionStore(path.join(folder, "sessions.db"));
    const host = await createHost({
      providers: { scripted: scriptedProvider() },
      store,
      core: [{ key: "tide/level", load: () => tideLevel }],
      builtins: false,
      plugins: [],
      watch: false,
      systemPrompt: "You are a test agent.",
      onDiagnostic: false,
    });
    const source = hostInspectorSource({ host, store });
    try {
      const model = new DevModelStore();
      const id = await source.host.createSession({ location: folder, provider: "scripted", model: "echo" });
      model.putSession({ id, location: folder, provider: "scripted", model: "echo" });
      // As `dev` feeds its model: at each request, the epoch and the messages appended since.
      let seen = 0;
      const fresh = async (): Promise<StoredMessage[]> => {
        const all = await host.messages(id);
        const added = all.filter((m) => m.seq > seen);
        seen = all.at(-1)?.seq ?? seen;
        return added;
      };
      const onRequest = async (request: ProviderRequest) => {
        const epoch = await host.epoch(id);
        if (epoch !== undefined) model.recordBoundary(id, { request, epoch, admitted: await fresh() });
      };
      for (const text of ["first", "second"]) {
        if (text === "second") tide = "high";
        await source.host.prompt(id, text);
        await source.host.step(id, { onRequest });
        model.appendMessages(id, await fresh());
      }
      const page = await source.session(id);
      const terminal = model.session(id);
      expect(page?.messages.map((m) => [m.text, m.isSystemUpdate])).to.deep.equal([
        ["first", false],
        ["reply 1: first", false],
        ["second", false],
        ["Tide is now high", true],
        ["reply 2: second", false],
      ]);
      expect(terminal?.messages).to.deep.equal(page?.messages);
      expect(page?.snapshot.map(({ key, value }) => [key, value])).to.deep.equal([["tide/level", "high"]]);
      expect(terminal?.snapshot.map(({ key, value }) => [key, value])).to.deep.equal([["tide/level", "high"]]);
      const figures = (requests: readonly { at: string }[] | undefined) => requests?.map(({ at: _at, ...rest }) => rest);
      expect(figures(terminal?.requests)).to.deep.equal(figures(page?.requests));
      expect(page?.requests.map((r) => [r.index, r.epoch, r.prefix])).to.deep.equal([
        [1, 1, "first"],
        [2, 1, "extends"],
      ]);
      expect(terminal).to.deep.include({ epoch: page?.epoch, messageCount: page?.messageCount, baseline: page?.baseline });
    } finally {
      source.close();
      await host.close();
    }
  });

  it("a message view marks a Mid-Conversation System Message and names the tools", () => {
    const call = { id: "c1", name: "read", input: { path: "a" } };
    expect(messageView({ seq: 3, role: "system-update", text: "Tide is now high", epoch: 1 })).to.deep.equal({
      seq: 3,
      epoch: 1,
      role: "system-update",
      text: "Tide is now high",
      isSystemUpdate: true,
    });
    expect(messageView({ seq: 4, role: "assistant", text: "", epoch: 1, toolCalls: [call] }).toolNames).to.deep.equal(["read"]);
    expect(messageView({ seq: 5, role: "tool", text: "contents", epoch: 1, callId: "c1", name: "read" }).toolNames).to.deep.equal(
      ["read"],
    );
  });

  it("admission times: a kept value keeps its time, a changed one and every value of a new epoch take the new time", () => {
    const times = new AdmissionTimes();
    const at = (ms: number) => new Date(ms).toISOString();
    expect(times.observe({ number: 1, snapshot: { "b/y": { value: 1 }, "a/x": { value: "x" } } }, 10)).to.deep.equal([
      { key: "a/x", value: "x", admittedAt: at(10) },
      { key: "b/y", value: 1, admittedAt: at(10) },
    ]);
    expect(times.observe({ number: 1, snapshot: { "a/x": { value: "x" }, "b/y": { value: 2 } } }, 20)).to.deep.equal([
      { key: "a/x", value: "x", admittedAt: at(10) },
      { key: "b/y", value: 2, admittedAt: at(20) },
    ]);
    expect(times.observe({ number: 2, snapshot: { "a/x": { value: "x" } } }, 30)).to.deep.equal([
      { key: "a/x", value: "x", admittedAt: at(30) },
    ]);
  });
});

describe("session view: the cached-prefix share of a request", () => {
  const request = (system: string[], texts: string[], epoch = 1, reason = "initial"): ProviderRequest => ({
    provider: "p",
    model: "m",
    system,
    messages: texts.map((text) => ({ role: "user" as const, text })),
    epoch: { number: epoch, reason },
  });

  it("a new epoch's Baseline reuses the system prompt and the Baseline's text up to its first change", () => {
    const previous = request(["prompt", "alpha: 1\n\nbeta: 1"], ["hi"]);
    const next = request(["prompt", "alpha: 1\n\nbeta: 2"], ["hi"], 2, "move");
    const share = prefixShare(previous, next);
    expect(share).to.deep.equal({
      bytes: "prompt".length + "alpha: 1\n\nbeta: 2".length + JSON.stringify({ role: "user", text: "hi" }).length,
      reusedBytes: "prompt".length + "alpha: 1\n\nbeta: ".length,
      prefix: "new-epoch",
      reason: "move",
    });
  });

  it("a differing message is new as a whole; another model reuses nothing", () => {
    const previous = request(["s"], ["one", "two"]);
    const next = request(["s"], ["one", "TWO", "three"]);
    const one = JSON.stringify({ role: "user", text: "one" }).length;
    expect(prefixShare(previous, next)).to.include({ reusedBytes: 1 + one, prefix: "break-within-epoch" });
    expect(prefixShare(previous, { ...next, model: "other" })).to.include({ reusedBytes: 0 });
    expect(prefixShare(undefined, next)).to.include({ reusedBytes: 0, prefix: "first" });
  });
});
