// What the proxy benches share: an upstream on 127.0.0.1 that answers the Messages API at
// once (JSON) or as a slow stream (a first event after a model's think time, then one every
// gap), Claude Code-shaped request bodies (system blocks with cache markers, tools, a history
// of user and assistant turns with tool calls and results, a trailing `role: "system"`
// environment message), and a plugin folder of Context Sources.

import { mkdirSync, writeFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import type { ContextProxyOptions } from "../../core/index.ts";

export interface BenchUpstream {
  readonly url: string;
  close(): Promise<void>;
}

/** A Messages-API upstream: JSON at once, or a stream of `events` events (`firstMs` to the first, `gapMs` between). */
export async function startBenchUpstream(stream: { firstMs: number; gapMs: number; events: number }): Promise<BenchUpstream> {
  const json = JSON.stringify({
    id: "msg_1",
    type: "message",
    role: "assistant",
    content: [{ type: "text", text: "ok" }],
    usage: { input_tokens: 10, cache_read_input_tokens: 20000, cache_creation_input_tokens: 100, output_tokens: 1 },
  });
  const sockets = new Set<import("node:net").Socket>();
  const server = http.createServer((request, response) => {
    let isStream = false;
    request.on("data", (chunk: Buffer) => {
      // A stream request says so near its start; the rest of the body is only drained.
      if (!isStream && chunk.includes('"stream":true')) isStream = true;
    });
    request.on("end", () => {
      if (!isStream) {
        response.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(json) });
        response.end(json);
        return;
      }
      response.writeHead(200, { "content-type": "text/event-stream" });
      response.flushHeaders();
      let sent = 0;
      const next = () => {
        if (response.destroyed) return;
        if (sent === stream.events) {
          response.end('event: message_stop\ndata: {"type":"message_stop"}\n\n');
          return;
        }
        sent++;
        response.write(
          `event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"w${sent}"}}\n\n`,
        );
        setTimeout(next, stream.gapMs);
      };
      setTimeout(next, stream.firstMs);
    });
  });
  server.keepAliveTimeout = 60_000;
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

const words = "the quick brown fox jumps over the lazy dog while the agent reads files and runs tests ".repeat(40);

/**
 * A Claude Code-shaped body of `turns` exchanges (2 messages each) plus the opening, each
 * message's text `textBytes` long; `label` makes the conversation's opening its own.
 */
export function claudeCodeBody(options: { turns: number; textBytes: number; label: string; stream?: boolean }): string {
  const text = (n: number) => `${n} ${words}`.slice(0, options.textBytes);
  const messages: unknown[] = [
    {
      role: "user",
      content: [
        { type: "text", text: `<system-reminder>${options.label}</system-reminder>` },
        { type: "text", text: text(0) },
      ],
    },
  ];
  for (let turn = 1; turn <= options.turns; turn++) {
    const id = `toolu_${options.label}_${turn}`;
    messages.push(
      {
        role: "assistant",
        content: [
          { type: "text", text: text(turn) },
          { type: "tool_use", id, name: "Read", input: { file_path: `/work/project/src/file${turn}.ts` } },
        ],
      },
      { role: "user", content: [{ type: "tool_result", tool_use_id: id, content: text(turn + 1) }] },
    );
  }
  const last = messages.at(-1) as { content: { cache_control?: unknown }[] };
  (last.content.at(-1) as { cache_control?: unknown }).cache_control = { type: "ephemeral" };
  messages.push({
    role: "system",
    content: [{ type: "text", text: "gitStatus: clean\nWorking directory: /nowhere", cache_control: { type: "ephemeral" } }],
  });
  return JSON.stringify({
    model: "claude-opus-4-8",
    max_tokens: 32000,
    system: [
      { type: "text", text: "You are Claude Code, Anthropic's official CLI for Claude." },
      { type: "text", text: words.repeat(3), cache_control: { type: "ephemeral" } },
    ],
    tools: ["Read", "Write", "Edit", "Bash", "Grep", "Glob", "Task", "WebFetch"].map((name) => ({
      name,
      description: `${name}: ${words.slice(0, 600)}`,
      input_schema: { type: "object", properties: { path: { type: "string" } } },
    })),
    messages,
    metadata: { user_id: `user_bench_account__session_${options.label}` },
    ...(options.stream === true ? { stream: true } : {}),
  });
}

/** A folder of `plugins` plugins with `sourcesEach` sources each, whose values change when `tickFile` does. */
export function writeBenchPlugins(folder: string, plugins: number, sourcesEach: number, tickFile: string): void {
  mkdirSync(folder, { recursive: true });
  writeFileSync(tickFile, "0");
  for (let p = 0; p < plugins; p++) {
    writeFileSync(
      path.join(folder, `bench${p}.ts`),
      `import { readFileSync } from "node:fs";
import { definePlugin } from "context-host/plugin";
import Type from "typebox";

export default definePlugin({
  name: "bench${p}",
  setup(api) {
    for (let s = 0; s < ${sourcesEach}; s++) {
      api.source({
        key: "bench${p}/source" + s,
        schema: Type.Object({ tick: Type.String(), item: Type.Integer() }),
        // Source 0 of plugin 0 changes with the tick file; the others stay.
        load: () => ({ tick: ${p} === 0 && s === 0 ? readFileSync(${JSON.stringify(tickFile)}, "utf8") : "steady", item: s }),
        baseline: (v) => "bench${p} source " + v.item + " is at " + v.tick,
        update: (_p, v) => "bench${p} source " + v.item + " is now at " + v.tick,
      });
    }
  },
});
`,
    );
  }
}

/** The options of a bench's proxy over `folder` (its `plugins/`, its `data/`) in front of `upstream`. */
export function benchProxyOptions(folder: string, upstream: string): ContextProxyOptions {
  return {
    port: 0,
    plugins: [path.join(folder, "plugins")],
    watch: false,
    builtins: false,
    dataDir: path.join(folder, "data"),
    location: folder,
    upstreams: { anthropic: upstream },
    onDiagnostic: false,
  };
}
