// Test fixture: a local HTTP server on 127.0.0.1 (port 0) that records each request's
// raw body bytes and answers from a script, so adapter tests never reach the internet;
// `serverPerTest` gives each test of an adapter its own.

import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { expect } from "chai";
import type { ConnectionOptions } from "../../core/providers/index.ts";

/** One request as it arrived. */
export interface RecordedRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  /** The body exactly as received, decoded as UTF-8. */
  readonly body: string;
}

/** What the server answers: a status, headers, and a body sent in one piece or as chunks. */
export interface ScriptedAnswer {
  readonly status?: number;
  readonly headers?: Record<string, string>;
  readonly body?: string;
  /** Sent one by one with a flush between, to exercise split SSE frames. */
  readonly chunks?: readonly string[];
  /** Never answer (the client's timeout must fire). */
  readonly hang?: boolean;
  /** Send the chunks, then keep the response open without finishing it. */
  readonly stall?: boolean;
}

/** A running recording server. */
export interface RecordingServer {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  readonly requests: RecordedRequest[];
  close(): Promise<void>;
}

/** Starts a server answering request number `index` (0-based) with `answer(request, index)`. */
export async function startRecordingServer(
  answer: (request: RecordedRequest, index: number) => ScriptedAnswer,
): Promise<RecordingServer> {
  const requests: RecordedRequest[] = [];
  const server = createServer((incoming, outgoing) => {
    const parts: Buffer[] = [];
    incoming.on("data", (part: Buffer) => parts.push(part));
    incoming.on("end", () => {
      const request: RecordedRequest = {
        method: incoming.method ?? "",
        path: incoming.url ?? "",
        headers: incoming.headers,
        body: Buffer.concat(parts).toString("utf8"),
      };
      requests.push(request);
      const scripted = answer(request, requests.length - 1);
      if (scripted.hang === true) return;
      outgoing.writeHead(scripted.status ?? 200, scripted.headers ?? { "content-type": "application/json" });
      if (scripted.chunks === undefined) {
        outgoing.end(scripted.body ?? "");
        return;
      }
      void writeChunks(outgoing, scripted.chunks, scripted.stall === true);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** What `serverPerTest` gives a `describe`. */
export interface ServerPerTest {
  /** The server the running test started with `serve`. */
  readonly server: RecordingServer;
  /** Starts the running test's server, answering request number `index` (0-based) with `answer(index)`. */
  serve(answer: (index: number) => ScriptedAnswer): Promise<void>;
  /** The waits between attempts the adapter asked for, in milliseconds, in this test. */
  readonly delays: readonly number[];
  /** Connection options that back off from 1 ms and record each wait in `delays` instead of sleeping. */
  readonly recordedWaits: Pick<ConnectionOptions, "retry" | "sleep">;
}

/**
 * Registers hooks on the current `describe`: each test starts its own recording server
 * with `serve`, closed after the test, and its own empty list of `delays`.
 */
export function serverPerTest(): ServerPerTest {
  let current: RecordingServer | undefined;
  const delays: number[] = [];

  beforeEach(() => {
    delays.length = 0;
  });
  afterEach(async () => {
    await current?.close();
    current = undefined;
  });

  const running = (): RecordingServer => {
    if (current === undefined) throw new Error("no recording server: the test has not called serve");
    return current;
  };
  return {
    server: {
      get url() {
        return running().url;
      },
      get requests() {
        return running().requests;
      },
      close: () => running().close(),
    },
    async serve(answer) {
      current = await startRecordingServer((_, index) => answer(index));
    },
    delays,
    recordedWaits: {
      retry: { baseDelayMs: 1 },
      sleep: async (milliseconds) => {
        delays.push(milliseconds);
      },
    },
  };
}

/** The exact bytes of the `messages` array in a recorded body; fails the test unless they are canonical JSON. */
export function rawMessages(body: string): string {
  const serialized = JSON.stringify((JSON.parse(body) as { messages: unknown }).messages);
  expect(body).to.include(`"messages":${serialized}`);
  return serialized;
}

async function writeChunks(outgoing: ServerResponse, chunks: readonly string[], isStalling: boolean): Promise<void> {
  for (const chunk of chunks) {
    outgoing.write(chunk);
    await new Promise((resolve) => setImmediate(resolve));
  }
  if (!isStalling) outgoing.end();
}

/** Anthropic-style SSE frames: `event: <type>` and `data: <json>` per event. */
export function anthropicEventStream(events: readonly { readonly type: string; readonly [field: string]: unknown }[]): string {
  return events.map((event) => `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`).join("");
}

/** OpenAI-style SSE frames: `data: <json>` per chunk, then `data: [DONE]`. */
export function openAIEventStream(chunks: readonly object[]): string {
  return `${chunks.map((chunk) => `data: ${JSON.stringify(chunk)}\n\n`).join("")}data: [DONE]\n\n`;
}

/** Splits text into pieces of `size` characters, cutting frames (and CRLFs) anywhere. */
export function splitEvery(text: string, size: number): string[] {
  const pieces: string[] = [];
  for (let start = 0; start < text.length; start += size) pieces.push(text.slice(start, start + size));
  return pieces;
}

export const sseHeaders = { "content-type": "text/event-stream; charset=utf-8" };
export const jsonHeaders = { "content-type": "application/json" };
