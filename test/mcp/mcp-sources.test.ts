// MCP servers as Context Sources, against real servers: the stdio fixture spawned as a
// process, the Streamable HTTP fixture on 127.0.0.1, and @modelcontextprotocol/server-everything.
// A resource's update is only marked; the next boundary reads it once and admits its new state.

import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { expect } from "chai";
import Type from "typebox";
import { formatDiagnostic, type Host, SettingInvalid } from "../../core/index.ts";
import { resourceKeyName } from "../../core/mcp/render.ts";
import * as SystemContext from "../../core/system-context.ts";
import { startModernHttpWorld } from "../../scripts/bench/mcp-world.ts";
import { render } from "../../scripts/cli/render.ts";
import { loadSettings } from "../../scripts/cli/settings.ts";
import { McpHostHarness, StdioFixture, startHttpFixture, systemUpdates, until } from "./harness.ts";

const require = createRequire(import.meta.url);

const state = {
  instructions: "Prefer the fixture's notes.",
  resources: [
    { uri: "fixture://notes/today", name: "Today", text: "Buy milk." },
    { uri: "fixture://notes/config.json", name: "Config", mimeType: "application/json", text: '{"mode":"fast"}' },
  ],
};

async function session(host: Host): Promise<string> {
  return host.createSession({ location: process.cwd(), provider: "scripted", model: "m" });
}

describe("MCP sources: resources and instructions over stdio", function () {
  this.timeout(30_000);
  let harness: McpHostHarness;
  beforeEach(() => {
    harness = new McpHostHarness();
  });
  afterEach(() => harness.close());

  it("exposed resources and the server's instructions are in the first Baseline, keyed mcp/<server>/<name> in key order", async () => {
    const fixture = new StdioFixture(harness.folder, state, { resources: ["*"] });
    const host = await harness.host({ mcpServers: { notes: fixture.settings } });
    const id = await session(host);
    const request = await harness.turn(host, id);
    const epoch = await host.epoch(id);
    // Named by the names the server lists them under ("Config", "Today").
    expect(Object.keys(epoch?.snapshot ?? {})).to.deep.equal(["mcp/notes/config", "mcp/notes/instructions", "mcp/notes/today"]);
    expect(request.system.at(-1)).to.equal(
      [
        '<mcp-resource server="notes" uri="fixture://notes/config.json" type="application/json">\n{"mode":"fast"}\n</mcp-resource>',
        '<mcp-instructions server="notes">\nPrefer the fixture\'s notes.\n</mcp-instructions>',
        '<mcp-resource server="notes" uri="fixture://notes/today">\nBuy milk.\n</mcp-resource>',
      ].join("\n\n"),
    );
    expect(host.currentDiagnostics()).to.deep.equal([]);
  });

  it("MCP sources sit among the plugin sources in key order, after the core sources", async () => {
    const plugins = path.join(harness.folder, "plugins");
    mkdirSync(plugins);
    for (const name of ["alpha", "zeta"]) {
      writeFileSync(
        path.join(plugins, `${name}.ts`),
        `import { definePlugin } from "context-host/plugin";
import Type from "typebox";
export default definePlugin({ name: "${name}", setup(api) {
  api.source({ key: "${name}/note", schema: Type.String(), load: () => "${name}", baseline: (v) => "note " + v, update: (_p, v) => "note " + v });
} });`,
      );
    }
    const fixture = new StdioFixture(harness.folder, state, { resources: ["fixture://notes/today"] });
    const host = await harness.host({
      mcpServers: { notes: fixture.settings },
      plugins: [plugins],
      isolation: "none",
      core: [
        {
          key: "host/first",
          load: () =>
            SystemContext.make({
              key: "host/first",
              schema: Type.String(),
              load: () => "x",
              baseline: () => "first",
              update: () => "first",
            }),
        },
      ],
    });
    const id = await session(host);
    await harness.turn(host, id);
    expect(Object.keys((await host.epoch(id))?.snapshot ?? {})).to.deep.equal([
      "host/first",
      "alpha/note",
      "mcp/notes/instructions",
      "mcp/notes/today",
      "zeta/note",
    ]);
  });

  it("an updated resource reaches the model once, at the next boundary, as its new state, read exactly once", async () => {
    const fixture = new StdioFixture(harness.folder, state, { resources: ["*"] });
    const host = await harness.host({ mcpServers: { notes: fixture.settings } });
    const id = await session(host);
    await harness.turn(host, id);
    expect((await fixture.stats()).subscribed).to.deep.equal(["fixture://notes/config.json", "fixture://notes/today"]);
    const before = (await fixture.stats()).reads;
    await fixture.send({ op: "update", uri: "fixture://notes/today", text: "Buy oat milk." });
    await until("the update marked", () => host.mcpServers()[0]?.resources.some((r) => r.state === "changed") ?? false);
    const request = await harness.turn(host, id);
    expect(systemUpdates(request)).to.deep.equal([
      'The MCP resource fixture://notes/today of server notes is now:\n<mcp-resource server="notes" uri="fixture://notes/today">\nBuy oat milk.\n</mcp-resource>',
    ]);
    const after = (await fixture.stats()).reads;
    expect(after["fixture://notes/today"]).to.equal((before["fixture://notes/today"] ?? 0) + 1);
    expect(after["fixture://notes/config.json"]).to.equal(before["fixture://notes/config.json"]);
    // Admitted once: the boundary after it has nothing new and reads nothing.
    const next = await harness.turn(host, id);
    expect(systemUpdates(next)).to.have.length(1);
    expect((await fixture.stats()).reads).to.deep.equal(after);
  });

  it("an update never wakes an idle session, and an idle step reads nothing", async () => {
    const fixture = new StdioFixture(harness.folder, state, { resources: ["fixture://notes/today"] });
    const host = await harness.host({ mcpServers: { notes: fixture.settings } });
    const id = await session(host);
    await harness.turn(host, id);
    const reads = (await fixture.stats()).reads;
    await fixture.send({ op: "update", uri: "fixture://notes/today", text: "Call Ann." });
    await until("the update marked", () => host.mcpServers()[0]?.resources[0]?.state === "changed");
    expect((await host.step(id)).kind).to.equal("idle");
    expect((await fixture.stats()).reads).to.deep.equal(reads);
    expect((await host.messages(id)).map((m) => m.role)).to.deep.equal(["user", "assistant"]);
    const request = await harness.turn(host, id);
    expect(systemUpdates(request)).to.have.length(1);
    expect(systemUpdates(request)[0]).to.contain("Call Ann.");
  });

  it("list_changed adds a source (its baseline) and removes one (its removal text) at the next boundary", async () => {
    const fixture = new StdioFixture(harness.folder, state, { resources: ["*"], instructions: false });
    const host = await harness.host({ mcpServers: { notes: fixture.settings } });
    const id = await session(host);
    await harness.turn(host, id);
    await fixture.send({ op: "add", resource: { uri: "fixture://notes/tomorrow", name: "Tomorrow", text: "Rest." } });
    await fixture.send({ op: "remove", uri: "fixture://notes/config.json" });
    const request = await harness.turn(host, id);
    expect(systemUpdates(request)).to.deep.equal([
      [
        '<mcp-resource server="notes" uri="fixture://notes/tomorrow">\nRest.\n</mcp-resource>',
        "The MCP resource fixture://notes/config.json of server notes no longer applies.",
      ].join("\n\n"),
    ]);
    expect(Object.keys((await host.epoch(id))?.snapshot ?? {})).to.deep.equal(["mcp/notes/today", "mcp/notes/tomorrow"]);
  });

  it("a server that crashes makes its sources unavailable (the admitted state stays), is reconnected, and is read again", async () => {
    const fixture = new StdioFixture(harness.folder, state, { resources: ["fixture://notes/today"], instructions: false });
    const host = await harness.host({ mcpServers: { notes: fixture.settings } });
    const id = await session(host);
    await harness.turn(host, id);
    const first = await fixture.process();
    await fixture.send({ op: "crash" }).catch(() => {});
    await until("the server down", () => host.mcpServers()[0]?.state !== "connected");
    const request = await harness.turn(host, id);
    expect(systemUpdates(request)).to.deep.equal([]);
    expect(Object.keys((await host.epoch(id))?.snapshot ?? {})).to.deep.equal(["mcp/notes/today"]);
    expect(host.diagnostics.map((d) => [d.origin, d.file, d.phase, d.message])).to.deep.include([
      "mcp",
      "mcpServers.notes",
      "connect",
      "the connection closed",
    ]);
    // The back-off's reconnection spawns a new process; its world starts afresh.
    await until("a new process", async () => (await fixture.process()).pid !== first.pid);
    await until("reconnected", () => host.mcpServers()[0]?.state === "connected");
    await fixture.send({ op: "update", uri: "fixture://notes/today", text: "After the crash." });
    await harness.turn(host, id);
    const messages = await host.messages(id);
    expect(messages.filter((m) => m.role === "system-update").map((m) => m.text)).to.deep.equal([
      'The MCP resource fixture://notes/today of server notes is now:\n<mcp-resource server="notes" uri="fixture://notes/today">\nAfter the crash.\n</mcp-resource>',
    ]);
    expect(host.currentDiagnostics().filter((d) => d.phase === "connect")).to.deep.equal([]);
  });

  it("a server whose reads hang cannot hold a boundary past its deadline: the read's deadline fires and the source is unavailable", async () => {
    const fixture = new StdioFixture(harness.folder, state, {
      resources: ["fixture://notes/today"],
      instructions: false,
      deadlineMs: 300,
    });
    const host = await harness.host({ mcpServers: { notes: fixture.settings } });
    const id = await session(host);
    await harness.turn(host, id);
    // Spawning may take longer than the boundary's deadline: the first read then finishes after it.
    await until("the first read", () => host.mcpServers()[0]?.resources[0]?.state === "read");
    await fixture.send({ op: "mode", mode: "hang" });
    await fixture.send({ op: "update", uri: "fixture://notes/today", text: "Never read." });
    await until("the update marked", () => host.mcpServers()[0]?.resources[0]?.state === "changed");
    const request = await harness.turn(host, id);
    expect(systemUpdates(request)).to.deep.equal([]);
    const fired = host.currentDiagnostics().filter((d) => d.phase === "read");
    expect(fired.map((d) => [d.file, d.key, d.message])).to.deep.equal([
      ["mcpServers.notes", "mcp/notes/today", "read of fixture://notes/today missed its deadline of 300 ms"],
    ]);
  });

  it("malformed content makes the resource unavailable with a diagnostic naming server and resource; a binary one is not a source", async () => {
    const fixture = new StdioFixture(
      harness.folder,
      {
        resources: [...state.resources, { uri: "fixture://logo.png", name: "Logo", blob: "iVBORw0KGgo=", mimeType: "image/png" }],
      },
      { resources: ["*"] },
    );
    const host = await harness.host({ mcpServers: { notes: fixture.settings } });
    const id = await session(host);
    await harness.turn(host, id);
    expect(Object.keys((await host.epoch(id))?.snapshot ?? {})).to.deep.equal(["mcp/notes/config", "mcp/notes/today"]);
    expect(host.diagnostics.map((d) => [d.key, d.message])).to.deep.include([
      "mcp/notes/logo",
      "fixture://logo.png is binary (image/png): not a source",
    ]);
    await fixture.send({ op: "mode", mode: "malformed" });
    await fixture.send({ op: "update", uri: "fixture://notes/today", text: "x" });
    await until("the update marked", () => host.mcpServers()[0]?.resources.some((r) => r.state === "changed") ?? false);
    expect(systemUpdates(await harness.turn(host, id))).to.deep.equal([]);
    const malformed = host.currentDiagnostics().find((d) => d.key === "mcp/notes/today");
    expect(malformed?.file).to.equal("mcpServers.notes");
    expect(malformed?.message).to.match(/^cannot read fixture:\/\/notes\/today: /);
    expect(formatDiagnostic(malformed as never, "/elsewhere")).to.match(/^mcpServers\.notes \[mcp read mcp\/notes\/today\]/);
  });

  it("a server without subscriptions is re-read only after its ttlMs hint", async () => {
    const fixture = new StdioFixture(
      harness.folder,
      { ...state, subscribe: false, ttlMs: 3_600_000 },
      { resources: ["fixture://notes/today"], instructions: false },
    );
    const always = new StdioFixture(harness.folder, { ...state, subscribe: false }, { resources: ["fixture://notes/today"] });
    const host = await harness.host({ mcpServers: { hinted: fixture.settings, plain: always.settings } });
    const id = await session(host);
    await harness.turn(host, id);
    await harness.turn(host, id);
    await harness.turn(host, id);
    expect((await fixture.stats()).reads).to.deep.equal({ "fixture://notes/today": 1 });
    // Without a hint or a configured max age it is read at every boundary.
    expect((await always.stats()).reads).to.deep.equal({ "fixture://notes/today": 3 });
  });

  it("a server that cannot start never blocks a session, and its env secret is in no diagnostic", async () => {
    const secret = "s3cr3t-token-42";
    const fixture = new StdioFixture(
      harness.folder,
      state,
      { resources: ["*"], deadlineMs: 2000 },
      { FIXTURE_CRASH_AT_START: "1", FIXTURE_SECRET: secret },
    );
    const host = await harness.host({ mcpServers: { broken: fixture.settings } });
    const id = await session(host);
    const request = await harness.turn(host, id);
    expect(request.system).to.deep.equal([""]);
    await until("a connect diagnostic", () => host.diagnostics.some((d) => d.phase === "connect"));
    const text = JSON.stringify(host.diagnostics);
    expect(text).to.contain("mcpServers.broken");
    expect(text).not.to.contain(secret);
  });

  it("a server that never answers initialize holds no boundary past its deadline, and closing the host ends it", async () => {
    const fixture = new StdioFixture(
      harness.folder,
      state,
      { resources: ["fixture://notes/today"], deadlineMs: 300 },
      { FIXTURE_HANG_AT_START: "1" },
    );
    const host = await harness.host({ mcpServers: { stuck: fixture.settings } });
    const id = await session(host);
    expect((await harness.turn(host, id)).system).to.deep.equal([""]);
    expect(host.diagnostics.map((d) => [d.file, d.phase, d.message])).to.deep.equal([
      ["mcpServers.stuck", "connect", "connecting missed its deadline of 300 ms"],
    ]);
    expect(host.mcpServers()[0]?.state).to.equal("connecting");
    const { pid } = await fixture.process();
    await host.close();
    expect(host.mcpServers()[0]?.state).to.equal("closed");
    await until("the stuck process gone", () => !isAlive(pid));
  });

  it("a server's error that repeats its env secret reaches the diagnostic with the secret masked", async () => {
    const secret = "tok-9f8e7d6c";
    const fixture = new StdioFixture(
      harness.folder,
      state,
      { resources: ["fixture://notes/today"], instructions: false },
      { FIXTURE_SECRET: secret },
    );
    const host = await harness.host({ mcpServers: { notes: fixture.settings } });
    const id = await session(host);
    await harness.turn(host, id);
    await fixture.send({ op: "mode", mode: "fail" });
    await fixture.send({ op: "update", uri: "fixture://notes/today", text: "x" });
    await until("the update marked", () => host.mcpServers()[0]?.resources[0]?.state === "changed");
    expect(systemUpdates(await harness.turn(host, id))).to.deep.equal([]);
    const failed = host.currentDiagnostics().find((d) => d.key === "mcp/notes/today");
    expect(failed?.message).to.match(/^cannot read fixture:\/\/notes\/today: .*read failed, token \*\*\*$/);
    expect(JSON.stringify(host.diagnostics)).not.to.contain(secret);
  });

  it("a URI template with its arguments exposes the expanded resource under the configured name", async () => {
    const fixture = new StdioFixture(harness.folder, state, {
      resources: [{ template: "fixture://notes/{day}", arguments: { day: "today" }, name: "day" }],
      instructions: false,
    });
    const host = await harness.host({ mcpServers: { notes: fixture.settings } });
    const request = await harness.turn(host, await session(host));
    expect(request.system).to.deep.equal([
      '<mcp-resource server="notes" uri="fixture://notes/today">\nBuy milk.\n</mcp-resource>',
    ]);
    expect(host.mcpServers()[0]?.resources.map((r) => r.key)).to.deep.equal(["mcp/notes/day"]);
  });

  it("a resource named by its URI alone is keyed by the name the server lists it under; names that meet are told apart in URI order", async () => {
    const fixture = new StdioFixture(
      harness.folder,
      {
        ...state,
        resources: [
          ...state.resources,
          { uri: "fixture://b/shopping", name: "Shopping List", text: "Eggs." },
          { uri: "fixture://a/shopping", name: "shopping list!", text: "Flour." },
        ],
      },
      { resources: ["fixture://notes/today", "fixture://b/shopping", "fixture://a/shopping"], instructions: false },
    );
    const host = await harness.host({ mcpServers: { notes: fixture.settings } });
    await harness.turn(host, await session(host));
    expect(host.mcpServers()[0]?.resources.map((r) => [r.key, r.uri])).to.deep.equal([
      ["mcp/notes/shopping-list", "fixture://a/shopping"],
      ["mcp/notes/shopping-list-2", "fixture://b/shopping"],
      ["mcp/notes/today", "fixture://notes/today"],
    ]);
  });

  it("closing the host ends a stdio server's process", async () => {
    const fixture = new StdioFixture(harness.folder, state, { resources: ["fixture://notes/today"] });
    const host = await harness.host({ mcpServers: { notes: fixture.settings } });
    await harness.turn(host, await session(host));
    const { pid } = await fixture.process();
    expect(isAlive(pid)).to.equal(true);
    await host.close();
    await until("the server process gone", () => !isAlive(pid));
  });

  it("@modelcontextprotocol/server-everything over stdio: a static document and the server's instructions", async () => {
    const everything = require.resolve("@modelcontextprotocol/server-everything/package.json");
    const folder = path.dirname(everything);
    const host = await harness.host({
      mcpServers: {
        everything: {
          command: process.execPath,
          args: [path.join(folder, "dist", "index.js"), "stdio"],
          resources: ["demo://resource/static/document/features.md"],
          deadlineMs: 10_000,
        },
      },
    });
    const id = await session(host);
    await harness.turn(host, id);
    const snapshot = (await host.epoch(id))?.snapshot ?? {};
    expect(Object.keys(snapshot)).to.deep.equal(["mcp/everything/features.md", "mcp/everything/instructions"]);
    const document = snapshot["mcp/everything/features.md"]?.value as {
      contents: Array<{ text: string }>;
    };
    expect(document.contents[0]?.text).to.equal(readFileSync(path.join(folder, "dist", "docs", "features.md"), "utf8"));
    expect(host.mcpServers()[0]?.resources[0]?.isSubscribed).to.equal(true);
  });
});

describe("MCP sources: Streamable HTTP on 127.0.0.1", function () {
  this.timeout(30_000);
  let harness: McpHostHarness;
  beforeEach(() => {
    harness = new McpHostHarness();
  });
  afterEach(() => harness.close());

  it("an update over Streamable HTTP is admitted once at the next boundary, with the configured header sent", async () => {
    const fixture = await startHttpFixture(state, { requiredHeader: ["authorization", "Bearer abc-123-secret"] });
    harness.onClose(fixture.close);
    const host = await harness.host({
      mcpServers: {
        remote: { url: fixture.url, headers: { authorization: "Bearer abc-123-secret" }, resources: ["fixture://notes/today"] },
      },
    });
    const id = await session(host);
    const first = await harness.turn(host, id);
    expect(first.system.at(-1)).to.contain("Buy milk.");
    await fixture.world.apply({ op: "update", uri: "fixture://notes/today", text: "Over HTTP." });
    await until("the update marked", () => host.mcpServers()[0]?.resources[0]?.state === "changed");
    expect(systemUpdates(await harness.turn(host, id))).to.have.length(1);
    expect(fixture.world.stats().reads).to.deep.equal({ "fixture://notes/today": 2 });
  });

  it("a server that goes away makes its sources unavailable; when it is back it is reconnected and read again", async () => {
    const today = (text: string) => ({ subscribe: false, resources: [{ uri: "fixture://notes/today", name: "Today", text }] });
    const first = await startHttpFixture(today("Buy milk."));
    const host = await harness.host({ mcpServers: { remote: { url: first.url, resources: ["fixture://notes/today"] } } });
    const id = await session(host);
    expect((await harness.turn(host, id)).system).to.deep.equal([
      '<mcp-resource server="remote" uri="fixture://notes/today">\nBuy milk.\n</mcp-resource>',
    ]);
    await first.close();
    // Not subscribed and without a ttlMs hint: read at every boundary, and this read fails.
    expect(systemUpdates(await harness.turn(host, id))).to.deep.equal([]);
    expect(host.mcpServers()[0]?.state).not.to.equal("connected");
    expect(host.diagnostics.map((d) => [d.phase, d.message])).to.deep.include(["connect", "the connection was lost"]);
    const second = await startHttpFixture(today("After the restart."), { port: Number(new URL(first.url).port) });
    harness.onClose(second.close);
    await until("reconnected", () => host.mcpServers()[0]?.state === "connected");
    expect(systemUpdates(await harness.turn(host, id))).to.deep.equal([
      'The MCP resource fixture://notes/today of server remote is now:\n<mcp-resource server="remote" uri="fixture://notes/today">\nAfter the restart.\n</mcp-resource>',
    ]);
  });

  it("a 2026-07-28 server: updates and list_changed come on subscriptions/listen; an update is read once, a new resource added", async () => {
    const fixture = await startModernHttpWorld(state);
    harness.onClose(fixture.close);
    const host = await harness.host({ mcpServers: { modern: { url: fixture.url, resources: ["*"], instructions: false } } });
    const id = await session(host);
    expect((await harness.turn(host, id)).system.at(-1)).to.contain("Buy milk.");
    expect(host.mcpServers()[0]?.resources.map((r) => r.isSubscribed)).to.deep.equal([true, true]);
    const reads = fixture.world.stats().reads;
    await fixture.world.apply({ op: "update", uri: "fixture://notes/today", text: "Modern milk." });
    await until("the update marked", () => host.mcpServers()[0]?.resources.some((r) => r.state === "changed") ?? false);
    expect(systemUpdates(await harness.turn(host, id))).to.deep.equal([
      'The MCP resource fixture://notes/today of server modern is now:\n<mcp-resource server="modern" uri="fixture://notes/today">\nModern milk.\n</mcp-resource>',
    ]);
    expect(fixture.world.stats().reads).to.deep.equal({
      ...reads,
      "fixture://notes/today": (reads["fixture://notes/today"] ?? 0) + 1,
    });
    await fixture.world.apply({ op: "add", resource: { uri: "fixture://notes/later", name: "Later", text: "Rest." } });
    await until("the list marked", async () => (await host.preview(id)).kind === "update");
    expect(systemUpdates(await harness.turn(host, id)).slice(1)).to.deep.equal([
      '<mcp-resource server="modern" uri="fixture://notes/later">\nRest.\n</mcp-resource>',
    ]);
  });

  it("a header secret the server refuses is in no diagnostic", async () => {
    const fixture = await startHttpFixture(state, { requiredHeader: ["authorization", "Bearer right"] });
    harness.onClose(fixture.close);
    const secret = "Bearer wrong-token-77";
    const host = await harness.host({
      mcpServers: { remote: { url: fixture.url, headers: { authorization: secret }, resources: ["*"] } },
    });
    const id = await session(host);
    expect((await harness.turn(host, id)).system).to.deep.equal([""]);
    await until("a connect diagnostic", () => host.diagnostics.some((d) => d.phase === "connect"));
    const text = JSON.stringify(host.diagnostics);
    expect(text).to.contain("mcpServers.remote");
    expect(text).not.to.contain("wrong-token-77");
    expect(text).to.contain("HTTP 401");
  });
});

describe("MCP sources: the settings file", function () {
  this.timeout(30_000);

  it("mcpServers in context-host.json: render shows the server's resources; a bad server is a usage error naming file and setting", async () => {
    const harness = new McpHostHarness();
    try {
      const fixture = new StdioFixture(harness.folder, state, { resources: ["fixture://notes/today"], instructions: false });
      const file = path.join(harness.folder, "context-host.json");
      writeFileSync(file, JSON.stringify({ mcpServers: { notes: fixture.settings } }));
      const out: string[] = [];
      const err: string[] = [];
      const code = await render({
        plugins: [],
        json: false,
        location: harness.folder,
        builtins: false,
        settings: loadSettings(undefined, harness.folder, "render"),
        out: (text) => out.push(text),
        err: (text) => err.push(text),
      });
      expect([code, out, err]).to.deep.equal([
        0,
        ['<mcp-resource server="notes" uri="fixture://notes/today">\nBuy milk.\n</mcp-resource>'],
        [],
      ]);
      writeFileSync(file, JSON.stringify({ mcpServers: { notes: { command: "x", env: { TOKEN: 12345 } } } }));
      expect(() => loadSettings(undefined, harness.folder, "render")).to.throw(
        /context-host\.json: setting mcpServers\.notes\.env\.TOKEN: /,
      );
    } finally {
      await harness.close();
    }
  });
});

describe("MCP sources: a resource's name in its key", () => {
  it("is the name the server lists, made a key part; else the URI without its scheme", () => {
    const cases: Array<[{ uri: string; name?: string }, string]> = [
      [{ uri: "fixture://notes/today", name: "Today" }, "today"],
      [{ uri: "x://y", name: "Features Document (v2)" }, "features-document-v2"],
      [{ uri: "x://y", name: "docs/Guide.md" }, "docs/guide.md"],
      [{ uri: "x://y", name: "--Café//Menü--" }, "caf-/men"],
      [{ uri: "demo://resource/static/document/features.md", name: "!!!" }, "resource/static/document/features.md"],
      [{ uri: "demo://resource/static/document/features.md" }, "resource/static/document/features.md"],
      [{ uri: "x://", name: "" }, "resource"],
    ];
    for (const [resource, name] of cases) expect(resourceKeyName(resource), JSON.stringify(resource)).to.equal(name);
    for (const [resource] of cases) expect(SystemContext.isKey(`mcp/s/${resourceKeyName(resource)}`)).to.equal(true);
  });
});

describe("MCP sources: settings", () => {
  it("a server without command or url, an unknown field or a bad name is refused, naming the setting", async () => {
    const harness = new McpHostHarness();
    try {
      const cases: Array<[unknown, string]> = [
        [{ a: { resources: ["*"] } }, "setting mcpServers.a: give either command (stdio) or url (Streamable HTTP)"],
        [{ a: { command: "x", headrs: {} } }, "setting mcpServers.a.headrs: unknown setting"],
        [{ a: { url: "ftp://x" } }, "setting mcpServers.a.url: must be an http: or https: URL"],
        [{ "My Server": { command: "x" } }, "setting mcpServers.My Server: a server's name must match"],
        [{ a: { command: "x", env: { TOKEN: 7 } } }, "setting mcpServers.a.env.TOKEN:"],
        [
          { a: { command: "x", resources: ["*", { template: "t://{day}/{+path}", arguments: { day: "mon" } }] } },
          "setting mcpServers.a.resources.1.arguments: no argument path for the template's {path}",
        ],
      ];
      for (const [mcpServers, message] of cases) {
        const error = await harness.host({ mcpServers: mcpServers as never }).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(error, message).to.be.instanceOf(SettingInvalid);
        expect((error as Error).message).to.contain(message);
        expect((error as Error).message).not.to.contain("7");
      }
    } finally {
      await harness.close();
    }
  });
});

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
