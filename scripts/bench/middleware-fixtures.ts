// Shared by the middleware benches: an engine with N core sources (a seeded few change
// between calls), and a local Anthropic-shaped server on 127.0.0.1 that answers each
// request at once (a JSON reply: text, or a tool call when asked) and keeps the bodies.

import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import Type from "typebox";
import { type ContextEngine, createContextEngine } from "../../core/host/engine.ts";
import type { CoreSource } from "../../core/sources/core-source.ts";
import * as SystemContext from "../../core/system-context.ts";

/** N core sources whose values live in `values`; change a value to change a source. */
export function benchSources(count: number): { values: string[]; core: CoreSource[]; context: SystemContext.SystemContext } {
  const values = Array.from({ length: count }, (_, i) => `value ${i}`);
  const made: SystemContext.SystemContext[] = [];
  const core = values.map((_, i): CoreSource => {
    const key = `core/s${String(i).padStart(3, "0")}`;
    // Made once, as a host's core source would be: each boundary loads it again.
    const source = SystemContext.make({
      key,
      schema: Type.String(),
      load: () => values[i] as string,
      baseline: (value: string) => `${key}: ${value}`,
      update: (_previous: string, value: string) => `${key} is now ${value}`,
    });
    made.push(source);
    return { key, load: () => source };
  });
  return { values, core, context: SystemContext.combine(made) };
}

export async function benchEngine(dataDir: string, core: readonly CoreSource[]): Promise<ContextEngine> {
  return createContextEngine({ dataDir, core, builtins: false, plugins: [], watch: false });
}

/** A local Anthropic Messages server: `toolCalls(index)` says whether request `index` gets a tool call. */
export async function anthropicServer(toolCalls: (index: number) => boolean): Promise<{
  url: string;
  bodies: string[];
  close(): Promise<void>;
}> {
  const bodies: string[] = [];
  const server = createServer((request, response) => {
    const parts: Buffer[] = [];
    request.on("data", (part: Buffer) => parts.push(part));
    request.on("end", () => {
      const index = bodies.length;
      bodies.push(Buffer.concat(parts).toString("utf8"));
      const tool = toolCalls(index);
      const content = tool
        ? [{ type: "tool_use", id: `toolu_${index}`, name: "read_file", input: { path: `src/${index}.ts` } }]
        : [{ type: "text", text: `Reply ${index}.` }];
      response.writeHead(200, { "content-type": "application/json" });
      response.end(
        JSON.stringify({
          id: `msg_${index}`,
          type: "message",
          role: "assistant",
          model: "claude-opus-4-8",
          content,
          stop_reason: tool ? "tool_use" : "end_turn",
          stop_sequence: null,
          usage: { input_tokens: 10, output_tokens: 5 },
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    bodies,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
