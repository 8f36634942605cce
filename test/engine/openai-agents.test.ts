// contextInputFilter with the real OpenAI Agents SDK (`@openai/agents`), its model calls
// going to a local Chat Completions server on 127.0.0.1: the Baseline follows the agent's
// instructions, an update changed by a tool between model calls appears once after the
// tool's result, and every request of the run extends the previous one.

import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Agent, OpenAIProvider, Runner, setTracingDisabled, tool } from "@openai/agents";
import { expect } from "chai";
import { z } from "zod";
import { type ContextEngine, createContextEngine } from "../../core/host/engine.ts";
import { contextInputFilter } from "../../core/openai-agents.ts";
import { extendsOpenAIPrefix } from "../../core/providers/prefix-extension.ts";
import { jsonHeaders, type RecordingServer, startRecordingServer } from "../providers/server.ts";
import { testSource } from "../session/fixtures.ts";

describe("contextInputFilter with the OpenAI Agents SDK", function () {
  this.timeout(20_000);
  let dir = "";
  let server: RecordingServer | undefined;
  let engine: ContextEngine | undefined;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "agents-"));
  });
  afterEach(async () => {
    await engine?.close();
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("a run with a tool call: the Baseline after the instructions, the update once after the tool result, each request extending the last", async () => {
    const branch = testSource("core/branch", "main");
    engine = await createContextEngine({ core: [branch.core], builtins: false, plugins: [], watch: false, dataDir: dir });
    server = await startRecordingServer((request, index) => {
      const { model } = JSON.parse(request.body) as { model: string };
      const message =
        index === 0
          ? {
              role: "assistant",
              content: null,
              tool_calls: [{ id: "call_1", type: "function", function: { name: "checkout", arguments: '{"branch":"feature"}' } }],
            }
          : { role: "assistant", content: "On feature now." };
      return {
        headers: jsonHeaders,
        body: JSON.stringify({
          id: `chatcmpl_${index}`,
          object: "chat.completion",
          created: 0,
          model,
          choices: [{ index: 0, message, finish_reason: index === 0 ? "tool_calls" : "stop" }],
          usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
        }),
      };
    });
    setTracingDisabled(true);
    const runner = new Runner({
      modelProvider: new OpenAIProvider({ baseURL: `${server.url}/v1`, apiKey: "test", useResponses: false }),
      callModelInputFilter: contextInputFilter(engine),
    });
    const agent = new Agent({
      name: "coder",
      instructions: "You are a coding agent.",
      model: "gpt-4.1",
      tools: [
        tool({
          name: "checkout",
          description: "Switch branches.",
          parameters: z.object({ branch: z.string() }),
          execute: async ({ branch: name }) => {
            branch.state.value = name;
            return `switched to ${name}`;
          },
        }),
      ],
    });
    const result = await runner.run(agent, "Switch to feature.", {
      context: { "context-host": { sessionId: "run-1", location: dir } },
    });
    expect(result.finalOutput).to.equal("On feature now.");
    const bodies = server.requests.map(
      (request) => JSON.parse(request.body) as { messages: { role: string; content: unknown }[] },
    );
    expect(bodies).to.have.length(2);
    expect(extendsOpenAIPrefix(bodies[0] as never, bodies[1] as never)).to.equal(true);
    expect(bodies[0]!.messages[0]).to.deep.equal({ role: "system", content: "You are a coding agent.\n\ncore/branch is main" });
    const messages = bodies[1]!.messages;
    const updates = messages.filter((message) => message.role === "system" && message.content === "core/branch is now feature");
    expect(updates).to.have.length(1);
    expect(messages[messages.indexOf(updates[0] as never) - 1]!.role).to.equal("tool");
  });
});
