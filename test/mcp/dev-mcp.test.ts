// `context-host dev` with MCP servers from its settings file: the resources reach the Baseline
// and `/mcp` lists each server's state and its resources' sources.

import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { PassThrough } from "node:stream";
import { expect } from "chai";
import { main } from "../../scripts/cli/main.ts";
import { McpHostHarness, StdioFixture, until } from "./harness.ts";

describe("context-host dev: /mcp", function () {
  this.timeout(30_000);
  let harness: McpHostHarness;
  beforeEach(() => {
    harness = new McpHostHarness();
  });
  afterEach(() => harness.close());

  it("lists the servers, their state and each resource's key, URI and reads", async () => {
    const fixture = new StdioFixture(
      harness.folder,
      { instructions: "Use notes.", resources: [{ uri: "fixture://notes/today", name: "Today", text: "Buy milk." }] },
      { resources: ["*"] },
    );
    writeFileSync(path.join(harness.folder, "context-host.json"), JSON.stringify({ mcpServers: { notes: fixture.settings } }));
    const input = new PassThrough();
    const output = new PassThrough();
    let text = "";
    output.on("data", (chunk: Buffer) => {
      text += chunk.toString("utf8");
    });
    const dir = harness.folder;
    mkdirSync(path.join(dir, "plugins"));
    const exited = main(["dev", "--plugins", path.join(dir, "plugins"), "--data", path.join(dir, ".data")], {
      cwd: dir,
      out: () => {},
      err: (t) => {
        text += t;
      },
      input,
      output,
      env: {},
    });
    await until("the prompt", () => text.includes("Type a prompt"));
    input.write("hello\n");
    await until("the reply", () => text.includes("assistant: reply 1: hello"));
    expect(text).to.contain('<mcp-resource server="notes" uri="fixture://notes/today">');
    input.write("/mcp\n");
    await until("the listing", () => text.includes("mcp/notes/today"));
    input.end();
    expect(await exited).to.equal(0);
    const listing = text.slice(text.indexOf("  notes (stdio"));
    expect(listing).to.contain("  notes (stdio, connected, subscriptions)\n");
    expect(listing).to.contain("    mcp/notes/instructions\n");
    expect(listing).to.match(
      / {4}mcp\/notes\/today {2}fixture:\/\/notes\/today {2}read, subscribed, 1 reads, last read \d+\.\d ms/,
    );
  });
});
