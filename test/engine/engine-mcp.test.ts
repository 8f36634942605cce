// The context engine carries MCP sources to any loop: a resource of a real MCP server (the
// stdio fixture) is in the engine's Baseline, and its update reaches the caller's next
// boundary once, as one update after the caller's newest message.

import { expect } from "chai";
import { createContextEngine } from "../../core/host/engine.ts";
import { McpHostHarness, StdioFixture } from "../mcp/harness.ts";

describe("context engine with MCP servers", function () {
  this.timeout(30_000);
  let harness: McpHostHarness;
  beforeEach(() => {
    harness = new McpHostHarness();
  });
  afterEach(() => harness.close());

  it("a resource is in the Baseline, and its update is admitted once at the caller's next boundary", async () => {
    const fixture = new StdioFixture(harness.folder, {
      instructions: "",
      resources: [{ uri: "fixture://notes/today", name: "Today", text: "Buy milk." }],
    });
    const engine = await createContextEngine({
      dataDir: harness.folder,
      builtins: false,
      plugins: [],
      watch: false,
      mcpServers: { notes: { ...fixture.settings, resources: ["fixture://notes/today"], instructions: false } },
    });
    harness.onClose(() => engine.close());
    const at = (messages: unknown[]) => ({ location: harness.folder, provider: "openai", model: "gpt-5", messages });
    const history: unknown[] = [{ role: "user", content: "What is on my list?" }];
    const first = await engine.boundary("s", at(history));
    expect(first.baseline).to.contain("Buy milk.");
    await fixture.send({ op: "update", uri: "fixture://notes/today", text: "Buy bread." });
    history.push({ role: "assistant", content: "Milk." }, { role: "user", content: "And now?" });
    let next = await engine.boundary("s", at(history));
    // The notification is only marked: the boundary after it reads the resource.
    for (let turn = 0; next.updates.length === 0 && turn < 50; turn++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      history.push({ role: "assistant", content: "…" }, { role: "user", content: "Again?" });
      next = await engine.boundary("s", at(history));
    }
    expect(next.updates).to.have.length(1);
    expect(next.updates[0]!.text).to.contain("Buy bread.");
    expect(next.updates[0]!.position).to.be.at.least(3);
    expect(engine.mcpServers().map((server) => server.name)).to.deep.equal(["notes"]);
  });
});
