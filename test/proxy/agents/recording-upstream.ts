// A recording stand-in for the model APIs that agent CLIs call. It listens on 127.0.0.1,
// records every request (method, path with query, headers, raw body, parsed JSON body)
// and answers the Anthropic Messages, OpenAI Responses and OpenAI Chat Completions APIs
// validly enough (JSON or SSE) that a CLI ends its turn after one request: one short
// assistant text, no tool calls. Used to capture fixtures and by the long agent tests;
// not part of `npm test`.
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import * as zlib from "node:zlib";

export interface RecordedRequest {
  /** Order of arrival, from 1. */
  seq: number;
  /** Milliseconds since the epoch when the body was complete. */
  time: number;
  method: string;
  /** Path with query string, as sent. */
  path: string;
  headers: Record<string, string | string[]>;
  /** The body as received (still encoded if the client compressed it). */
  rawBody: Buffer;
  /** The body decoded (content-encoding undone) and parsed as JSON; the text if it is not JSON; undefined if empty. */
  body: unknown;
  /** What the recorder answered. */
  status: number;
  /** Which API the recorder took the request for. */
  kind: "anthropic-messages" | "anthropic-count-tokens" | "responses" | "chat-completions" | "models" | "other";
}

export interface RecordingUpstreamOptions {
  /** The assistant text of every answer. */
  replyText?: string;
  /**
   * When the request asks for thinking / reasoning (Anthropic `thinking` enabled or adaptive;
   * Responses `reasoning` or `include: ["reasoning.encrypted_content"]`), answer with a
   * thinking block (with a signature) or a reasoning item (with encrypted_content) before the
   * text, as the real APIs do, so the next turn shows how the CLI replays them. Default true.
   */
  reasoning?: boolean;
  /** Print one line per request to stderr. */
  log?: boolean;
}

export interface RecordingUpstream {
  /** Base URL without a trailing slash, e.g. http://127.0.0.1:43210 (append /v1 for OpenAI-style clients). */
  url: string;
  port: number;
  /** Every request so far, in order of arrival. */
  requests: RecordedRequest[];
  close(): Promise<void>;
}

const DEFAULT_REPLY = "Hello! This is a recorded test reply.";
const THINKING_TEXT = "The user greets me; a short reply is enough.";

/** An opaque stand-in for a signature / encrypted_content blob. */
function opaque(): string {
  return Buffer.from(`recorder-opaque-${randomUUID()}`).toString("base64");
}

function wantsThinking(body: Record<string, unknown>): boolean {
  const t = asRecord(body.thinking).type;
  return t === "enabled" || t === "adaptive";
}

function wantsReasoning(body: Record<string, unknown>): boolean {
  return (
    (Array.isArray(body.include) && body.include.includes("reasoning.encrypted_content")) ||
    (body.reasoning !== undefined && body.reasoning !== null)
  );
}

function decodeBody(raw: Buffer, encoding: string | undefined): Buffer {
  if (!encoding || raw.length === 0) return raw;
  const enc = encoding.trim().toLowerCase();
  try {
    if (enc === "gzip" || enc === "x-gzip") return zlib.gunzipSync(raw);
    if (enc === "deflate") return zlib.inflateSync(raw);
    if (enc === "br") return zlib.brotliDecompressSync(raw);
    if (enc === "zstd") {
      const zstd = (zlib as unknown as { zstdDecompressSync?: (b: Buffer) => Buffer }).zstdDecompressSync;
      if (zstd) return zstd(raw);
    }
  } catch {
    return raw;
  }
  return raw;
}

function parseBody(buf: Buffer): unknown {
  if (buf.length === 0) return undefined;
  const text = buf.toString("utf8");
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function readAll(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

function asRecord(v: unknown): Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

function sendJson(res: ServerResponse, status: number, value: unknown): void {
  const text = JSON.stringify(value);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

function startSse(res: ServerResponse): void {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
}

function sseEvent(res: ServerResponse, event: string | undefined, data: unknown): void {
  const payload = typeof data === "string" ? data : JSON.stringify(data);
  res.write(`${event ? `event: ${event}\n` : ""}data: ${payload}\n\n`);
}

/** A rough token estimate (4 bytes a token) so usage numbers are plausible. */
function estimateTokens(buf: Buffer): number {
  return Math.max(1, Math.ceil(buf.length / 4));
}

function anthropicMessages(
  res: ServerResponse,
  body: Record<string, unknown>,
  raw: Buffer,
  text: string,
  reasoning: boolean,
): void {
  const thinking = reasoning && wantsThinking(body) ? { thinking: THINKING_TEXT, signature: opaque() } : undefined;
  const id = `msg_rec_${randomUUID().replace(/-/g, "").slice(0, 24)}`;
  const model = typeof body.model === "string" ? body.model : "claude-test";
  const inputTokens = estimateTokens(raw);
  const outputTokens = Math.max(1, Math.ceil(text.length / 4));
  const usage = {
    input_tokens: inputTokens,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
    output_tokens: outputTokens,
  };
  if (body.stream !== true) {
    sendJson(res, 200, {
      id,
      type: "message",
      role: "assistant",
      model,
      content: [...(thinking ? [{ type: "thinking", ...thinking }] : []), { type: "text", text }],
      stop_reason: "end_turn",
      stop_sequence: null,
      usage,
    });
    return;
  }
  startSse(res);
  sseEvent(res, "message_start", {
    type: "message_start",
    message: {
      id,
      type: "message",
      role: "assistant",
      model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { ...usage, output_tokens: 1 },
    },
  });
  sseEvent(res, "ping", { type: "ping" });
  let index = 0;
  if (thinking) {
    sseEvent(res, "content_block_start", {
      type: "content_block_start",
      index,
      content_block: { type: "thinking", thinking: "", signature: "" },
    });
    sseEvent(res, "content_block_delta", {
      type: "content_block_delta",
      index,
      delta: { type: "thinking_delta", thinking: thinking.thinking },
    });
    sseEvent(res, "content_block_delta", {
      type: "content_block_delta",
      index,
      delta: { type: "signature_delta", signature: thinking.signature },
    });
    sseEvent(res, "content_block_stop", { type: "content_block_stop", index });
    index++;
  }
  sseEvent(res, "content_block_start", { type: "content_block_start", index, content_block: { type: "text", text: "" } });
  const half = Math.ceil(text.length / 2);
  for (const part of [text.slice(0, half), text.slice(half)]) {
    if (part)
      sseEvent(res, "content_block_delta", { type: "content_block_delta", index, delta: { type: "text_delta", text: part } });
  }
  sseEvent(res, "content_block_stop", { type: "content_block_stop", index });
  sseEvent(res, "message_delta", {
    type: "message_delta",
    delta: { stop_reason: "end_turn", stop_sequence: null },
    usage: { input_tokens: inputTokens, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: outputTokens },
  });
  sseEvent(res, "message_stop", { type: "message_stop" });
  res.end();
}

function openaiResponses(
  res: ServerResponse,
  body: Record<string, unknown>,
  raw: Buffer,
  text: string,
  reasoning: boolean,
): void {
  const reasoningItem =
    reasoning && wantsReasoning(body)
      ? { id: `rs_rec_${randomUUID().replace(/-/g, "")}`, type: "reasoning", summary: [], encrypted_content: opaque() }
      : undefined;
  const respId = `resp_rec_${randomUUID().replace(/-/g, "")}`;
  const itemId = `msg_rec_${randomUUID().replace(/-/g, "")}`;
  const model = typeof body.model === "string" ? body.model : "gpt-test";
  const created = Math.floor(Date.now() / 1000);
  const inputTokens = estimateTokens(raw);
  const outputTokens = Math.max(1, Math.ceil(text.length / 4));
  const usage = {
    input_tokens: inputTokens,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: outputTokens,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: inputTokens + outputTokens,
  };
  const doneItem = {
    id: itemId,
    type: "message",
    status: "completed",
    role: "assistant",
    content: [{ type: "output_text", text, annotations: [], logprobs: [] }],
  };
  const base = {
    id: respId,
    object: "response",
    created_at: created,
    model,
    instructions: typeof body.instructions === "string" ? body.instructions : null,
    tools: Array.isArray(body.tools) ? body.tools : [],
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    tool_choice: body.tool_choice ?? "auto",
    store: body.store ?? false,
    previous_response_id: body.previous_response_id ?? null,
    reasoning: body.reasoning ?? null,
    text: body.text ?? { format: { type: "text" } },
    metadata: {},
    error: null,
    incomplete_details: null,
  };
  const output = [...(reasoningItem ? [reasoningItem] : []), doneItem];
  const msgIndex = output.length - 1;
  if (body.stream !== true) {
    sendJson(res, 200, { ...base, status: "completed", output, output_text: text, usage });
    return;
  }
  startSse(res);
  let seq = 0;
  const ev = (type: string, data: Record<string, unknown>) => sseEvent(res, type, { type, sequence_number: seq++, ...data });
  ev("response.created", { response: { ...base, status: "in_progress", output: [], usage: null } });
  ev("response.in_progress", { response: { ...base, status: "in_progress", output: [], usage: null } });
  if (reasoningItem) {
    ev("response.output_item.added", { output_index: 0, item: { id: reasoningItem.id, type: "reasoning", summary: [] } });
    ev("response.output_item.done", { output_index: 0, item: reasoningItem });
  }
  ev("response.output_item.added", {
    output_index: msgIndex,
    item: { id: itemId, type: "message", status: "in_progress", role: "assistant", content: [] },
  });
  ev("response.content_part.added", {
    item_id: itemId,
    output_index: msgIndex,
    content_index: 0,
    part: { type: "output_text", text: "", annotations: [], logprobs: [] },
  });
  const half = Math.ceil(text.length / 2);
  for (const part of [text.slice(0, half), text.slice(half)]) {
    if (part)
      ev("response.output_text.delta", { item_id: itemId, output_index: msgIndex, content_index: 0, delta: part, logprobs: [] });
  }
  ev("response.output_text.done", { item_id: itemId, output_index: msgIndex, content_index: 0, text, logprobs: [] });
  ev("response.content_part.done", {
    item_id: itemId,
    output_index: msgIndex,
    content_index: 0,
    part: { type: "output_text", text, annotations: [], logprobs: [] },
  });
  ev("response.output_item.done", { output_index: msgIndex, item: doneItem });
  ev("response.completed", { response: { ...base, status: "completed", output, usage } });
  res.end();
}

function chatCompletions(res: ServerResponse, body: Record<string, unknown>, raw: Buffer, text: string): void {
  const id = `chatcmpl-rec${randomUUID().replace(/-/g, "").slice(0, 20)}`;
  const model = typeof body.model === "string" ? body.model : "gpt-test";
  const created = Math.floor(Date.now() / 1000);
  const promptTokens = estimateTokens(raw);
  const completionTokens = Math.max(1, Math.ceil(text.length / 4));
  const usage = {
    prompt_tokens: promptTokens,
    completion_tokens: completionTokens,
    total_tokens: promptTokens + completionTokens,
    prompt_tokens_details: { cached_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: 0 },
  };
  if (body.stream !== true) {
    sendJson(res, 200, {
      id,
      object: "chat.completion",
      created,
      model,
      choices: [{ index: 0, message: { role: "assistant", content: text }, finish_reason: "stop", logprobs: null }],
      usage,
    });
    return;
  }
  startSse(res);
  const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) =>
    sseEvent(res, undefined, { id, object: "chat.completion.chunk", created, model, choices, ...extra });
  chunk([{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }]);
  const half = Math.ceil(text.length / 2);
  for (const part of [text.slice(0, half), text.slice(half)]) {
    if (part) chunk([{ index: 0, delta: { content: part }, finish_reason: null }]);
  }
  chunk([{ index: 0, delta: {}, finish_reason: "stop" }]);
  chunk([], { usage });
  sseEvent(res, undefined, "[DONE]");
  res.end();
}

function modelList(res: ServerResponse): void {
  const created = Math.floor(Date.now() / 1000);
  const ids = ["claude-opus-4-8", "claude-sonnet-4-5", "claude-haiku-4-5", "gpt-5.1-codex", "gpt-5", "test-model"];
  sendJson(res, 200, {
    object: "list",
    data: ids.map((id) => ({
      id,
      object: "model",
      type: "model",
      created,
      created_at: new Date(created * 1000).toISOString(),
      owned_by: "recorder",
      display_name: id,
    })),
    has_more: false,
    first_id: ids[0],
    last_id: ids[ids.length - 1],
    models: ids.map((slug) => ({ slug, display_name: slug })),
  });
}

/** Start the recorder on 127.0.0.1, on a free port unless one is given. */
export async function startRecordingUpstream(options: RecordingUpstreamOptions = {}, port = 0): Promise<RecordingUpstream> {
  const replyText = options.replyText ?? DEFAULT_REPLY;
  const reasoning = options.reasoning ?? true;
  const requests: RecordedRequest[] = [];
  let seq = 0;

  const server = createServer((req, res) => {
    void (async () => {
      const rawBody = await readAll(req);
      const path = req.url ?? "/";
      const pathname = path.split("?")[0] ?? "/";
      const method = req.method ?? "GET";
      const headers: Record<string, string | string[]> = {};
      for (const [k, v] of Object.entries(req.headers)) if (v !== undefined) headers[k] = v;
      const ce = req.headers["content-encoding"];
      const body = parseBody(decodeBody(rawBody, Array.isArray(ce) ? ce[0] : ce));
      const record: RecordedRequest = {
        seq: ++seq,
        time: Date.now(),
        method,
        path,
        headers,
        rawBody,
        body,
        status: 200,
        kind: "other",
      };
      requests.push(record);
      const obj = asRecord(body);
      if (method === "POST" && /\/messages\/count_tokens$/.test(pathname)) {
        record.kind = "anthropic-count-tokens";
        sendJson(res, 200, { input_tokens: estimateTokens(rawBody) });
      } else if (method === "POST" && /\/messages$/.test(pathname)) {
        record.kind = "anthropic-messages";
        anthropicMessages(res, obj, rawBody, replyText, reasoning);
      } else if (method === "POST" && /\/responses$/.test(pathname)) {
        record.kind = "responses";
        openaiResponses(res, obj, rawBody, replyText, reasoning);
      } else if (method === "POST" && /\/chat\/completions$/.test(pathname)) {
        record.kind = "chat-completions";
        chatCompletions(res, obj, rawBody, replyText);
      } else if (method === "GET" && /\/models$/.test(pathname)) {
        record.kind = "models";
        modelList(res);
      } else {
        record.status = 404;
        sendJson(res, 404, {
          type: "error",
          error: { type: "not_found_error", message: `recorder: no route for ${method} ${pathname}` },
        });
      }
      if (options.log) {
        process.stderr.write(`[recorder] #${record.seq} ${method} ${path} -> ${record.status} (${rawBody.length} bytes)\n`);
      }
    })().catch((err: unknown) => {
      if (!res.headersSent) sendJson(res, 500, { error: { message: String(err) } });
      else res.end();
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve());
  });
  const address = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${address.port}`,
    port: address.port,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
