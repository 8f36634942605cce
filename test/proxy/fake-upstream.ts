// A fake model API on 127.0.0.1 for the proxy's tests: it records each request (path,
// headers, parsed body) and answers in the wire the path names, as JSON or as a stream,
// with usage. A test can make the next answers an error, a slow stream, a stream cut off
// mid-way, or no answer at all.

import http from "node:http";
import type { AddressInfo } from "node:net";

export interface RecordedRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: http.IncomingHttpHeaders;
  readonly raw: string;
  readonly body: unknown;
}

/** What the upstream does with the next request. */
export type Behaviour =
  | { readonly kind: "answer" }
  | { readonly kind: "error"; readonly status: number; readonly body: string; readonly headers?: Record<string, string> }
  /** A stream whose events are `gapMs` apart. */
  | { readonly kind: "slow"; readonly gapMs: number }
  /** A stream cut off after its first event. */
  | { readonly kind: "break" }
  /** Headers never come. */
  | { readonly kind: "hang" }
  /** The connection is closed at once, no answer (as a server closing a kept-alive connection does). */
  | { readonly kind: "reset" }
  /** A stream written as fast as the socket takes it, `chunks` chunks of 64 KiB; `blocked` is set when a write had to wait. */
  | { readonly kind: "flood"; readonly chunks: number };

export interface FakeUpstream {
  readonly url: string;
  readonly requests: RecordedRequest[];
  /** Behaviours for the next requests, in order; then `answer`. */
  readonly next: Behaviour[];
  /** Requests whose response the client cancelled (the socket closed before the end). */
  readonly cancelled: string[];
  /** Whether a `flood` stream's write had to wait for the reader (back-pressure reached the upstream). */
  readonly flood: { blocked: boolean; written: number };
  close(): Promise<void>;
}

const usageOf = (path: string) =>
  path.includes("/messages")
    ? { input_tokens: 12, cache_read_input_tokens: 30, cache_creation_input_tokens: 5, output_tokens: 3 }
    : path.includes("/responses")
      ? { input_tokens: 40, input_tokens_details: { cached_tokens: 25 }, output_tokens: 3 }
      : { prompt_tokens: 40, completion_tokens: 3, prompt_tokens_details: { cached_tokens: 20 } };

/** The events of a streamed answer in the wire of `path`. */
function streamEvents(path: string): string[] {
  const usage = usageOf(path);
  const sse = (event: string | undefined, data: unknown) =>
    `${event === undefined ? "" : `event: ${event}\n`}data: ${typeof data === "string" ? data : JSON.stringify(data)}\n\n`;
  if (path.includes("/messages")) {
    return [
      sse("message_start", {
        type: "message_start",
        message: {
          id: "msg_1",
          type: "message",
          role: "assistant",
          content: [],
          model: "m",
          usage: { ...usage, output_tokens: 1 },
        },
      }),
      sse("content_block_start", { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }),
      sse("content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "ok" } }),
      sse("content_block_stop", { type: "content_block_stop", index: 0 }),
      sse("message_delta", { type: "message_delta", delta: { stop_reason: "end_turn" }, usage: { output_tokens: 3 } }),
      sse("message_stop", { type: "message_stop" }),
    ];
  }
  if (path.includes("/responses")) {
    return [
      sse("response.created", { type: "response.created", response: { id: "resp_1", status: "in_progress" } }),
      sse("response.output_text.delta", { type: "response.output_text.delta", delta: "ok" }),
      sse("response.completed", { type: "response.completed", response: { id: "resp_1", status: "completed", usage } }),
    ];
  }
  return [
    sse(undefined, { id: "c1", choices: [{ index: 0, delta: { role: "assistant", content: "ok" } }] }),
    sse(undefined, { id: "c1", choices: [{ index: 0, delta: {}, finish_reason: "stop" }] }),
    sse(undefined, { id: "c1", choices: [], usage }),
    sse(undefined, "[DONE]"),
  ];
}

function jsonAnswer(path: string): unknown {
  const usage = usageOf(path);
  if (path.includes("/messages")) {
    return { id: "msg_1", type: "message", role: "assistant", content: [{ type: "text", text: "ok" }], usage };
  }
  if (path.includes("/responses")) return { id: "resp_1", status: "completed", output: [], usage };
  return { id: "c1", choices: [{ index: 0, message: { role: "assistant", content: "ok" } }], usage };
}

export async function startFakeUpstream(): Promise<FakeUpstream> {
  const requests: RecordedRequest[] = [];
  const next: Behaviour[] = [];
  const cancelled: string[] = [];
  const flood = { blocked: false, written: 0 };
  const sockets = new Set<import("node:net").Socket>();
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const raw = Buffer.concat(chunks).toString("utf8");
      let body: unknown;
      try {
        body = raw === "" ? undefined : JSON.parse(raw);
      } catch {
        body = undefined;
      }
      const path = request.url ?? "/";
      requests.push({ method: request.method ?? "", path, headers: request.headers, raw, body });
      const behaviour = next.shift() ?? { kind: "answer" };
      response.on("close", () => {
        if (!response.writableFinished) cancelled.push(path);
      });
      if (behaviour.kind === "hang") return;
      if (behaviour.kind === "reset") {
        request.socket.destroy();
        return;
      }
      if (behaviour.kind === "error") {
        response.writeHead(behaviour.status, { "content-type": "application/json", ...behaviour.headers });
        response.end(behaviour.body);
        return;
      }
      const isStream = (body as { stream?: unknown } | undefined)?.stream === true;
      if (!isStream) {
        const json = JSON.stringify(jsonAnswer(path));
        response.writeHead(200, { "content-type": "application/json" });
        response.end(json);
        return;
      }
      response.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      response.flushHeaders();
      const events = streamEvents(path);
      if (behaviour.kind === "flood") {
        const chunk = `data: ${"x".repeat(64 * 1024 - 8)}\n\n`;
        const pump = () => {
          while (flood.written < behaviour.chunks) {
            flood.written++;
            if (!response.write(chunk)) {
              flood.blocked = true;
              response.once("drain", pump);
              return;
            }
          }
          response.end();
        };
        pump();
        return;
      }
      if (behaviour.kind === "break") {
        response.write(events[0]);
        setTimeout(() => response.socket?.destroy(), 20);
        return;
      }
      const gap = behaviour.kind === "slow" ? behaviour.gapMs : 0;
      let index = 0;
      const send = () => {
        if (response.destroyed) return;
        if (index === events.length) {
          response.end();
          return;
        }
        response.write(events[index++]);
        if (gap === 0) send();
        else setTimeout(send, gap);
      };
      send();
    });
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    next,
    cancelled,
    flood,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
