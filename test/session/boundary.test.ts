// The Safe Provider-Turn Boundary on a real SQLite file: ordering, the first turn,
// blocked initialization, idleness, new and removed sources, Unavailable Context,
// tool round-trips, and the prefix property of requests within an epoch.

import { rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { expect } from "chai";
import { type Host, PromptInvalid, type ScriptedProvider, scriptedProvider } from "../../core/index.ts";
import type { CoreSource } from "../../core/sources/core-source.ts";
import * as SystemContext from "../../core/system-context.ts";
import { hostsPerTest, requestOf, sent, sleep, systemUpdates, testSource, transcript } from "./fixtures.ts";

describe("session runtime: the Safe Provider-Turn Boundary", () => {
  const { folder, start, startSession, stop, extraFolder } = hostsPerTest();

  /**
   * A session on a host watching a fresh plugin folder, with `branch` its one core source;
   * the folder holds the weather plugin, reading `weather`, from the start when one is given.
   */
  async function startWatching(branch: CoreSource, provider: ScriptedProvider, weather?: string) {
    const plugins = extraFolder("plugins");
    if (weather !== undefined) writePlugin(plugins, "weather", weather);
    const { host, id } = await startSession(provider, { core: [branch], plugins: [plugins], watch: true, debounceMs: 10 });
    return { host, id, plugins };
  }

  it("newly promoted user input precedes one combined Mid-Conversation System Message holding every changed source", async () => {
    const branch = testSource("core/branch", "main");
    const date = testSource("core/date", "2025-01-01");
    const mode = testSource("core/mode", "build");
    const provider = scriptedProvider();
    const { host, id } = await startSession(provider, { core: [branch.core, date.core, mode.core] });
    await host.prompt(id, "first");
    await host.step(id);

    branch.state.value = "feature";
    date.state.value = "2025-01-02";
    await host.prompt(id, "second");
    await host.prompt(id, "third");
    const request = requestOf(await host.step(id));

    const combined = "core/branch is now feature\n\ncore/date is now 2025-01-02";
    expect(transcript(request.messages)).to.deep.equal([
      "user: first",
      "assistant: reply 1: first",
      "user: second",
      "user: third",
      `system-update: ${combined}`,
    ]);
    const messages = await host.messages(id);
    expect(transcript(messages)).to.deep.equal([...transcript(request.messages), "assistant: reply 2: third"]);
    // The durable message is the exact combined text the model was sent.
    expect(systemUpdates(messages).map((m) => m.text)).to.deep.equal([combined]);
  });

  it("an empty prompt is refused with an error naming the session, and nothing is admitted", async () => {
    const provider = scriptedProvider();
    const { host, id } = await startSession(provider, { core: [testSource("core/branch", "main").core] });
    let error: unknown;
    await host.prompt(id, "  ").catch((e: unknown) => {
      error = e;
    });
    expect(error).to.be.instanceOf(PromptInvalid);
    expect((error as Error).message)
      .to.contain(id)
      .and.contain("empty");
    expect(await host.step(id)).to.deep.equal({ kind: "idle" });
    expect(sent(provider)).to.equal(0);
  });

  it("the first boundary renders the Baseline System Context and emits no redundant Mid-Conversation System Message", async () => {
    const branch = testSource("core/branch", "main");
    const date = testSource("core/date", "2025-01-01");
    const provider = scriptedProvider();
    const { host, id } = await startSession(provider, { core: [branch.core, date.core] });
    await host.prompt(id, "hello");

    const first = requestOf(await host.step(id));
    expect(first.system).to.deep.equal(["You are a test agent.", "core/branch is main\n\ncore/date is 2025-01-01"]);
    expect(transcript(first.messages)).to.deep.equal(["user: hello"]);

    await host.prompt(id, "again");
    const second = requestOf(await host.step(id));
    expect(second.system).to.deep.equal(first.system);
    expect(systemUpdates(await host.messages(id))).to.deep.equal([]);
    expect((await host.messages(id)).map((m) => m.epoch)).to.deep.equal([1, 1, 1, 1]);
  });

  it("the first provider turn renders the values current at that turn, not at session creation or prompt time, and its Context Snapshot holds exactly them", async () => {
    const branch = testSource("core/branch", "main");
    const provider = scriptedProvider();
    const { host, id } = await startSession(provider, { core: [branch.core] });
    await host.prompt(id, "hello");
    branch.state.value = "feature";

    const first = requestOf(await host.step(id));
    expect(first.system[1]).to.equal("core/branch is feature");
    expect(transcript(first.messages)).to.deep.equal(["user: hello"]);

    // The snapshot was initialized from the same observation: the value the Baseline shows is no change.
    await host.prompt(id, "again");
    const second = requestOf(await host.step(id));
    expect(transcript(second.messages).at(-1)).to.equal("user: again");
    expect(systemUpdates(await host.messages(id))).to.deep.equal([]);
  });

  it("a blocked first Baseline promotes nothing and sends nothing; the prompt stays pending until it can be initialized", async () => {
    const branch = testSource("core/branch", "main");
    const date = testSource("core/date", SystemContext.unavailable);
    const provider = scriptedProvider();
    const { host, id } = await startSession(provider, { core: [branch.core, date.core] });
    await host.prompt(id, "hello");

    expect(await host.step(id)).to.deep.equal({ kind: "blocked", keys: ["core/date"] });
    expect(await host.step(id)).to.deep.equal({ kind: "blocked", keys: ["core/date"] });
    expect(await host.messages(id)).to.deep.equal([]);
    expect(sent(provider)).to.equal(0);

    date.state.value = "2025-01-01";
    const request = requestOf(await host.step(id));
    expect(request.system[1]).to.equal("core/branch is main\n\ncore/date is 2025-01-01");
    expect(transcript(await host.messages(id))).to.deep.equal(["user: hello", "assistant: reply 1: hello"]);
    expect(await host.step(id)).to.deep.equal({ kind: "idle" });
  });

  it("an idle session is never woken: source values and plugin files change without a step, a provider call or a message", async () => {
    const branch = testSource("core/branch", "main");
    const provider = scriptedProvider();
    const { host, id, plugins } = await startWatching(branch.core, provider, "sunny");
    expect(await host.step(id)).to.deep.equal({ kind: "idle" });
    expect(sent(provider)).to.equal(0);
    expect(branch.state.loads).to.equal(0);

    await host.prompt(id, "hello");
    requestOf(await host.step(id));
    const before = await host.messages(id);
    const loads = branch.state.loads;

    branch.state.value = "feature";
    const reloaded = nextPluginEvent(host, "activated", "weather");
    writePlugin(plugins, "weather", "rainy");
    await reloaded;
    await sleep(250);

    expect(await host.messages(id)).to.deep.equal(before);
    expect(sent(provider)).to.equal(1);
    expect(branch.state.loads, "no boundary sampled the sources").to.equal(loads);
    expect(await host.step(id)).to.deep.equal({ kind: "idle" });
    expect(sent(provider)).to.equal(1);

    // The next naturally scheduled boundary samples both changes lazily, as one message.
    await host.prompt(id, "next");
    const request = requestOf(await host.step(id));
    expect(transcript(request.messages).slice(-2)).to.deep.equal([
      "user: next",
      "system-update: core/branch is now feature\n\nweather is now rainy",
    ]);
  });

  it("a Context Source absent from the snapshot, a plugin added later or a core value first present, emits its baseline rendering once at the next boundary", async () => {
    const branch = testSource("core/branch", SystemContext.absent);
    const provider = scriptedProvider();
    const { host, id, plugins } = await startWatching(branch.core, provider);
    await host.prompt(id, "one");
    const first = requestOf(await host.step(id));
    expect(first.system[1]).to.equal("");

    const activated = nextPluginEvent(host, "activated", "weather");
    writePlugin(plugins, "weather", "sunny");
    await activated;
    branch.state.value = "main";
    await host.prompt(id, "two");
    const second = requestOf(await host.step(id));
    expect(transcript(second.messages).slice(-1)).to.deep.equal(["system-update: core/branch is main\n\nweather is sunny"]);
    expect(second.system).to.deep.equal(first.system);

    await host.prompt(id, "three");
    await host.step(id);
    expect(systemUpdates(await host.messages(id))).to.have.length(1);
  });

  it("a core Context Source newly registered by a restarted host emits its baseline rendering once at the next boundary, and the Baseline stays", async () => {
    const branch = testSource("core/branch", "main");
    const mode = testSource("core/mode", "build");
    const { host: before, id } = await startSession(scriptedProvider(), { core: [branch.core] });
    await before.prompt(id, "one");
    const first = requestOf(await before.step(id));
    await stop(before);

    const after = await start({ providers: { scripted: scriptedProvider() }, core: [branch.core, mode.core] });
    await after.prompt(id, "two");
    const second = requestOf(await after.step(id));
    expect(second.system).to.deep.equal(first.system);
    expect(transcript(second.messages).slice(-2)).to.deep.equal(["user: two", "system-update: core/mode is build"]);

    await after.prompt(id, "three");
    await after.step(id);
    expect(systemUpdates(await after.messages(id)).map((m) => m.text)).to.deep.equal(["core/mode is build"]);
  });

  it("a source that loads as absent, or a plugin that is removed, emits its stored removal text once", async () => {
    const branch = testSource("core/branch", "main");
    const provider = scriptedProvider();
    const { host, id, plugins } = await startWatching(branch.core, provider, "sunny");
    await host.prompt(id, "one");
    expect(requestOf(await host.step(id)).system[1]).to.equal("core/branch is main\n\nweather is sunny");

    const removed = nextPluginEvent(host, "removed", "weather");
    rmSync(path.join(plugins, "weather.ts"));
    await removed;
    branch.state.value = SystemContext.absent;
    await host.prompt(id, "two");
    const request = requestOf(await host.step(id));
    expect(transcript(request.messages).slice(-1)).to.deep.equal([
      "system-update: core/branch (main) no longer applies\n\nweather (sunny) no longer applies",
    ]);

    await host.prompt(id, "three");
    await host.step(id);
    expect(systemUpdates(await host.messages(id))).to.have.length(1);
  });

  it("Unavailable Context keeps the admitted state and emits nothing until a newly effective value is observed", async () => {
    const branch = testSource("core/branch", "main");
    const provider = scriptedProvider();
    const { host, id } = await startSession(provider, { core: [branch.core] });
    await host.prompt(id, "one");
    const first = requestOf(await host.step(id));

    branch.state.value = SystemContext.unavailable;
    await host.prompt(id, "two");
    const second = requestOf(await host.step(id));
    expect(second.system).to.deep.equal(first.system);
    expect(systemUpdates(await host.messages(id))).to.deep.equal([]);

    // Back with the admitted value: nothing is newly effective.
    branch.state.value = "main";
    await host.prompt(id, "three");
    await host.step(id);
    expect(systemUpdates(await host.messages(id))).to.deep.equal([]);

    branch.state.value = SystemContext.unavailable;
    await host.prompt(id, "four");
    await host.step(id);
    branch.state.value = "feature";
    await host.prompt(id, "five");
    await host.step(id);
    expect(systemUpdates(await host.messages(id)).map((m) => m.text)).to.deep.equal(["core/branch is now feature"]);
  });

  it("a tool round-trip settles its results durably, and they precede the next boundary's Mid-Conversation System Message", async () => {
    const branch = testSource("core/branch", "main");
    const provider = scriptedProvider([
      {
        text: "let me look",
        toolCalls: [
          { id: "call-1", name: "read", input: { path: "a.txt" } },
          { id: "call-2", name: "missing", input: {} },
          { id: "call-3", name: "broken", input: {} },
        ],
      },
    ]);
    const calls: unknown[] = [];
    const { host, id } = await startSession(provider, {
      core: [branch.core],
      tools: {
        read: (input, context) => {
          calls.push({ input, sessionId: context.sessionId, location: context.location });
          return `contents of ${(input as { path: string }).path}`;
        },
        broken: () => {
          throw new Error("disk on fire");
        },
      },
    });
    await host.prompt(id, "read a.txt");
    const first = await host.step(id);
    expect(first.kind).to.equal("replied");
    expect(calls).to.deep.equal([{ input: { path: "a.txt" }, sessionId: id, location: folder.path }]);

    const settled = await host.messages(id);
    expect(settled.slice(2).map((m) => ({ role: m.role, text: m.text, callId: m.callId, name: m.name }))).to.deep.equal([
      { role: "tool", text: "contents of a.txt", callId: "call-1", name: "read" },
      { role: "tool", text: 'Error: unknown tool "missing"', callId: "call-2", name: "missing" },
      { role: "tool", text: "Error: disk on fire", callId: "call-3", name: "broken" },
    ]);

    // A settled tool result awaits a reply: the next step is a boundary, not idle.
    branch.state.value = "feature";
    const request = requestOf(await host.step(id));
    expect(request.messages.map((m) => m.role)).to.deep.equal(["user", "assistant", "tool", "tool", "tool", "system-update"]);
    expect(request.messages[1]).to.deep.equal({
      role: "assistant",
      text: "let me look",
      toolCalls: [
        { id: "call-1", name: "read", input: { path: "a.txt" } },
        { id: "call-2", name: "missing", input: {} },
        { id: "call-3", name: "broken", input: {} },
      ],
    });
    expect(request.messages[2]).to.deep.equal({ role: "tool", callId: "call-1", name: "read", result: "contents of a.txt" });
    expect(await host.step(id)).to.deep.equal({ kind: "idle" });
  });

  it("within a Context Epoch every request extends the previous request byte for byte", async () => {
    const branch = testSource("core/branch", "main");
    const date = testSource("core/date", "2025-01-01");
    const provider = scriptedProvider(
      Array.from({ length: 40 }, (_, i) =>
        i % 5 === 2
          ? { text: `tool turn ${i}`, toolCalls: [{ id: `call-${i}`, name: "echo", input: i }] }
          : { text: `turn ${i}` },
      ),
    );
    const { host, id } = await startSession(provider, {
      core: [branch.core, date.core],
      tools: { echo: (input) => `echo ${String(input)}` },
    });
    for (let i = 0; i < 24; i++) {
      if (i % 3 === 1) branch.state.value = `branch-${i}`;
      if (i % 4 === 2) date.state.value = `2025-01-${String(i).padStart(2, "0")}`;
      if (i === 9) branch.state.value = SystemContext.unavailable;
      if (i === 11) await host.compact(id);
      if (i === 17) await host.switchModel(id, { model: "m2" });
      await host.prompt(id, `prompt ${i}`);
      // Steps until idle: tool round-trips are further boundaries of the same epoch.
      for (let result = await host.step(id); result.kind === "replied"; result = await host.step(id)) {}
    }

    const requests = provider.requests.filter(
      (r) => !r.messages.some((m) => m.role === "user" && m.text.startsWith("Summarize")),
    );
    let extensions = 0;
    let epochs = 1;
    for (let i = 1; i < requests.length; i++) {
      const previous = requests[i - 1]!;
      const current = requests[i]!;
      if (JSON.stringify(previous.system) !== JSON.stringify(current.system) || previous.model !== current.model) {
        epochs++;
        continue;
      }
      const prefix = JSON.stringify(previous.messages).slice(0, -1);
      expect(JSON.stringify(current.messages).startsWith(prefix), `request ${i} extends request ${i - 1}`).to.equal(true);
      extensions++;
    }
    expect(epochs, "initial, compaction and switch epochs").to.equal(3);
    expect(extensions).to.be.greaterThan(20);
    expect(systemUpdates(await host.messages(id)).length).to.be.greaterThan(5);
  });
});

/** Writes a plugin `name` whose one source `name/today` is `value`. */
function writePlugin(folder: string, name: string, value: string) {
  const code = `import { definePlugin } from "context-host";
import Type from "typebox";

export default definePlugin({
  name: ${JSON.stringify(name)},
  setup(api) {
    api.source({
      key: ${JSON.stringify(`${name}/today`)},
      schema: Type.String(),
      load: () => ${JSON.stringify(value)},
      baseline: (v) => \`${name} is \${v}\`,
      update: (_previous, v) => \`${name} is now \${v}\`,
      removed: (previous) => \`${name} (\${previous}) no longer applies\`,
    });
  },
});
`;
  writeFileSync(path.join(folder, `${name}.ts`), code);
}

/** Resolves at the next `kind` event of the plugin `name`: its next generation activated, or its removal. */
function nextPluginEvent(host: Host, kind: "activated" | "removed", name: string): Promise<void> {
  return new Promise((resolve) => {
    const off = host.onPluginEvent((event) => {
      if (event.kind === kind && event.plugin === name) {
        off();
        resolve();
      }
    });
  });
}
