// The browser inspector lists a host's MCP servers: each server's state and its resources'
// sources, in `/api/state` and as a table of the page.

import path from "node:path";
import { expect } from "chai";
import { createHost, scriptedProvider } from "../../core/index.ts";
import { SqliteSessionStore } from "../../core/store.ts";
import { hostInspectorSource, requestRecorder, startInspector } from "../../scripts/cli/inspector/index.ts";
import { McpHostHarness, StdioFixture } from "./harness.ts";

describe("inspector: MCP servers", function () {
  this.timeout(30_000);
  let harness: McpHostHarness;
  beforeEach(() => {
    harness = new McpHostHarness();
  });
  afterEach(() => harness.close());

  it("/api/state lists each server with its state and its resources' keys, URIs and reads; the page has their table", async () => {
    const fixture = new StdioFixture(
      harness.folder,
      { resources: [{ uri: "fixture://notes/today", name: "Today", text: "Buy milk." }] },
      { resources: ["*"], instructions: false },
    );
    const recorder = requestRecorder();
    const store = new SqliteSessionStore(path.join(harness.folder, "inspected.db"));
    const host = await createHost({
      providers: { scripted: recorder.wrap(scriptedProvider()) },
      store,
      plugins: [],
      watch: false,
      builtins: false,
      mcpServers: { notes: fixture.settings },
    });
    harness.onClose(() => host.close());
    const source = hostInspectorSource({ host, store, recorder });
    harness.onClose(async () => source.close());
    const inspector = await startInspector({ source, port: 0, host: "127.0.0.1" });
    harness.onClose(() => inspector.close());
    const id = await source.host.createSession({ location: harness.folder, provider: "scripted", model: "m" });
    await source.host.prompt(id, "hello");
    expect((await source.host.step(id)).kind).to.equal("replied");

    const state = (await (await fetch(new URL("/api/state", inspector.url))).json()) as { mcpServers: unknown };
    expect(state.mcpServers).to.deep.equal([
      {
        name: "notes",
        transport: "stdio",
        state: "connected",
        canSubscribe: true,
        resources: [
          {
            key: "mcp/notes/today",
            uri: "fixture://notes/today",
            state: "read",
            isSubscribed: true,
            readMs: host.mcpServers()[0]?.resources[0]?.readMs,
            reads: 1,
          },
        ],
      },
    ]);
    const page = await (await fetch(inspector.url)).text();
    expect(page).to.contain('<table id="mcp">');
  });
});
