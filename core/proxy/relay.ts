// Owns one request to an upstream API and its response relayed to the client: headers as
// the client sent them (less hop-by-hop ones and the proxy's own), the response's status,
// headers and body as they arrive, chunk by chunk with back-pressure, the body read on the
// side for token usage. A client that goes away cancels the upstream request.

import http from "node:http";
import https from "node:https";
import { PassThrough, type Readable } from "node:stream";
import zlib from "node:zlib";
import { readServerSentEvents } from "../providers/sse.ts";
import { proxyHeaders } from "./conversation.ts";
import type { UsageReader } from "./wire.ts";

const hopByHop = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "proxy-authenticate",
  "proxy-authorization",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "host",
  "content-length",
  proxyHeaders.session,
  proxyHeaders.location,
  proxyHeaders.token,
]);

const agents = {
  "http:": new http.Agent({ keepAlive: true, maxSockets: 256 }),
  "https:": new https.Agent({ keepAlive: true, maxSockets: 256 }),
};

/** The client's headers to send upstream: all but hop-by-hop ones, `host`, the length, and the proxy's own. */
export function forwardedHeaders(
  headers: http.IncomingHttpHeaders,
  options: { readonly dropContentEncoding?: boolean } = {},
): http.OutgoingHttpHeaders {
  const out: http.OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || hopByHop.has(name)) continue;
    if (options.dropContentEncoding === true && name === "content-encoding") continue;
    out[name] = value;
  }
  return out;
}

/** How an upstream exchange ended. */
export type RelayOutcome =
  | { readonly kind: "relayed"; readonly status: number; readonly upstreamMs: number }
  /** The upstream could not be reached, or did not answer in time: nothing was sent to the client yet. */
  | { readonly kind: "unreachable"; readonly reason: string }
  | { readonly kind: "timed-out" }
  /** The client went away: the upstream request was cancelled. */
  | { readonly kind: "cancelled"; readonly status?: number }
  /** The upstream failed after its response began: the client's response was cut off. */
  | { readonly kind: "broken"; readonly status: number; readonly reason: string };

export interface RelayRequest {
  readonly url: URL;
  readonly method: string;
  readonly headers: http.OutgoingHttpHeaders;
  /** The body: bytes or text to send, or the client's request to stream through. */
  readonly body: Buffer | string | Readable | undefined;
  /** How long the upstream may take to answer with its headers. */
  readonly timeoutMs: number;
  /** Reads the response's token usage on the side, if wanted. */
  readonly usage?: UsageReader;
}

/** Sends `request` upstream and relays the answer to `response`. Never throws. */
export function relay(request: RelayRequest, client: http.IncomingMessage, response: http.ServerResponse): Promise<RelayOutcome> {
  // Fields taken one by one, so the body is dropped once the answer began (a stream may last minutes).
  const { url, method, timeoutMs, usage, headers: given } = request;
  let body = request.body;
  return new Promise((resolve) => {
    const startedAt = performance.now();
    let outcome: RelayOutcome | undefined;
    const settle = (value: RelayOutcome) => {
      if (outcome !== undefined) return;
      outcome = value;
      resolve(value);
    };
    const transport = url.protocol === "https:" ? https : http;
    const headers = { ...given };
    if (Buffer.isBuffer(body)) headers["content-length"] = body.length;
    else if (typeof body === "string") headers["content-length"] = Buffer.byteLength(body);
    else if (client.headers["content-length"] !== undefined) headers["content-length"] = client.headers["content-length"];
    const isReplayable = body === undefined || Buffer.isBuffer(body) || typeof body === "string";
    let answered: http.IncomingMessage | undefined;
    let upstream: http.ClientRequest;
    const timer = setTimeout(() => {
      settle({ kind: "timed-out" });
      upstream.destroy();
    }, timeoutMs);
    const onClientGone = () => {
      if (response.writableFinished) return;
      clearTimeout(timer);
      settle({ kind: "cancelled", ...(answered === undefined ? {} : { status: answered.statusCode ?? 0 }) });
      upstream.destroy();
    };
    response.on("close", onClientGone);

    const send = (attempt: number) => {
      upstream = transport.request(url, { method, headers, agent: agents[url.protocol as "http:" | "https:"] });
      upstream.on("error", (error: NodeJS.ErrnoException) => {
        if (answered !== undefined || outcome !== undefined) return;
        // A kept-alive connection the upstream closed as this request went out: send it once more
        // on a new one (the body is bytes the proxy holds, so nothing is lost or sent twice).
        if (attempt === 0 && upstream.reusedSocket && isReplayable && (error.code === "ECONNRESET" || error.code === "EPIPE")) {
          send(1);
          return;
        }
        clearTimeout(timer);
        settle({ kind: "unreachable", reason: error.message });
      });
      upstream.on("response", (answer) => onAnswer(answer));
      if (body === undefined) upstream.end();
      else if (Buffer.isBuffer(body) || typeof body === "string") upstream.end(body);
      else body.pipe(upstream);
    };

    const onAnswer = (answer: http.IncomingMessage) => {
      answered = answer;
      body = undefined; // sent whole, and never again: a retry is only before an answer
      clearTimeout(timer);
      if (outcome !== undefined) {
        answer.destroy();
        return;
      }
      const status = answer.statusCode ?? 502;
      const out: http.OutgoingHttpHeaders = {};
      for (const [name, value] of Object.entries(answer.headers)) {
        if (value !== undefined && name !== "connection" && name !== "keep-alive" && name !== "transfer-encoding")
          out[name] = value;
      }
      response.writeHead(status, answer.statusMessage, out);
      response.flushHeaders();
      const usageRead = usage === undefined ? Promise.resolve() : readUsageAside(answer, usage);
      answer.on("error", (error) => {
        settle({ kind: "broken", status, reason: error.message });
        response.destroy(error);
      });
      answer.on("close", () => {
        if (answer.complete) return;
        settle({ kind: "broken", status, reason: "the upstream closed the connection mid-response" });
        response.destroy();
      });
      answer.on("end", () => {
        const upstreamMs = performance.now() - startedAt;
        // The exchange is reported once its usage is read (the client already has every byte).
        void usageRead.then(() => settle({ kind: "relayed", status, upstreamMs }));
      });
      answer.pipe(response);
    };
    send(0);
  });
}

/** Feeds a copy of the response to `reader`: server-sent events as they come, or the JSON at the end. */
function readUsageAside(answer: http.IncomingMessage, reader: UsageReader): Promise<void> {
  const type = String(answer.headers["content-type"] ?? "");
  const isStream = type.includes("text/event-stream");
  if (!isStream && !type.includes("json")) return Promise.resolve();
  const copy = new PassThrough();
  answer.on("data", (chunk: Buffer) => copy.write(chunk));
  answer.on("end", () => copy.end());
  answer.on("close", () => {
    if (!answer.complete) copy.destroy();
  });
  const decoded = decode(copy, String(answer.headers["content-encoding"] ?? ""));
  return (async () => {
    try {
      if (isStream) {
        for await (const event of readServerSentEvents(decoded)) reader.event(event);
      } else {
        const chunks: Buffer[] = [];
        for await (const chunk of decoded) chunks.push(chunk as Buffer);
        reader.json(JSON.parse(Buffer.concat(chunks).toString("utf8")));
      }
    } catch {
      // Usage is read on the side: a body it cannot read is the client's to see, unchanged.
    }
  })();
}

function decode(stream: PassThrough, encoding: string): Readable {
  switch (encoding.trim().toLowerCase()) {
    case "gzip":
    case "x-gzip":
      return stream.pipe(zlib.createGunzip());
    case "deflate":
      return stream.pipe(zlib.createInflate());
    case "br":
      return stream.pipe(zlib.createBrotliDecompress());
    default:
      return stream;
  }
}

/** A request body, decoded from its `content-encoding`; `undefined` when the encoding is one the proxy cannot read. */
export function decodedBody(body: Buffer, encoding: string | undefined): Buffer | undefined {
  switch ((encoding ?? "").trim().toLowerCase()) {
    case "":
    case "identity":
      return body;
    case "gzip":
    case "x-gzip":
      return zlib.gunzipSync(body);
    case "deflate":
      return zlib.inflateSync(body);
    case "br":
      return zlib.brotliDecompressSync(body);
    default:
      return undefined;
  }
}
