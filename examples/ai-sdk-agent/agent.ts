// An AI SDK agent of its own (a `generateText` tool loop) that gains context-host by
// wrapping its model: each step sends the Baseline and the admitted Mid-Conversation
// System Messages, and the `read_file` tool's reads make the instruction files and the
// project's state current. With ANTHROPIC_API_KEY set it talks to Anthropic; without, to a
// scripted local server on 127.0.0.1 that answers as the Messages API does.
//
//   npm install && npm start            (in this folder)

import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { createAnthropic } from "@ai-sdk/anthropic";
import { generateText, jsonSchema, stepCountIs, tool, wrapLanguageModel } from "ai";
import { createContextEngine } from "context-host";
import { contextMiddleware } from "context-host/ai-sdk";

const here = import.meta.dirname;

/** A scripted Messages API: a tool call first, then a reply that repeats what it was told. */
async function scriptedAnthropic(): Promise<{ baseURL: string; close(): void }> {
  let calls = 0;
  const server = createServer((request, response) => {
    let body = "";
    request.on("data", (chunk: Buffer) => {
      body += chunk.toString("utf8");
    });
    request.on("end", () => {
      const sent = JSON.parse(body) as { system?: { text: string }[] };
      const content =
        calls++ === 0
          ? [{ type: "tool_use", id: "toolu_1", name: "read_file", input: { path: "package.json" } }]
          : [{ type: "text", text: `(scripted) I was told: ${(sent.system ?? []).map((block) => block.text).join(" | ")}` }];
      response.writeHead(200, { "content-type": "application/json" });
      response.end(
        JSON.stringify({
          id: `msg_${calls}`,
          type: "message",
          role: "assistant",
          model: "claude-opus-4-8",
          content,
          stop_reason: content[0]?.type === "tool_use" ? "tool_use" : "end_turn",
          stop_sequence: null,
          usage: { input_tokens: 1, output_tokens: 1 },
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { baseURL: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, close: () => server.close() };
}

const scripted = process.env.ANTHROPIC_API_KEY === undefined ? await scriptedAnthropic() : undefined;
const anthropic = createAnthropic(scripted === undefined ? {} : { baseURL: scripted.baseURL, apiKey: "scripted" });

// The engine: built-in sources (date, environment, AGENTS.md) and the example plugins, its sessions in .context-host/.
const engine = await createContextEngine({
  plugins: [path.join(here, "../plugins")],
  watch: false,
  dataDir: path.join(here, ".context-host"),
});
try {
  const model = wrapLanguageModel({ model: anthropic("claude-opus-4-8"), middleware: contextMiddleware(engine) });
  const result = await generateText({
    model,
    system: "You are a coding agent. Be brief.",
    prompt: "What project is this, and what is the weather?",
    tools: {
      read_file: tool({
        description: "Read a file of the project.",
        inputSchema: jsonSchema<{ path: string }>({
          type: "object",
          properties: { path: { type: "string" } },
          required: ["path"],
        }),
        execute: async ({ path: file }) => readFileSync(path.join(here, file), "utf8"),
      }),
    },
    stopWhen: stepCountIs(4),
    providerOptions: { "context-host": { sessionId: `example-${Date.now()}`, location: here } },
  });
  console.log(result.text);
} finally {
  await engine.close();
  scripted?.close();
}
