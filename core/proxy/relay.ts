// Owns one request to an upstream API and its response relayed to the client: headers as
// the client sent them (less hop-by-hop ones and the proxy's own), the response's status,
// headers and body as they arrive, chunk by chunk with back-pressure, the body read on the
// side for token usage. A client that goes away cancels the upstream request.

import http from "node:http";
import https from "node:https";
import { PassThrough, type Readable, type Transform } from "node:stream";
import { StringDecoder } from "node:string_decoder";
import zlib from "node:zlib";
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
  "http:": new http.Agent({ keepAlive: true }),
  "https:": new https.Agent({ keepAlive: true }),
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

/**
 * Feeds `reader` the usage of a response as it passes: for a stream, each `data:` line that
 * mentions `"usage"` (read as JSON; every other chunk costs a search, not a parse), for JSON the
 * whole body at its end. A compressed body is read through a decompressing copy.
 */
function readUsageAside(answer: http.IncomingMessage, reader: UsageReader): Promise<void> {
  const type = String(answer.headers["content-type"] ?? "");
  const isStream = type.includes("text/event-stream");
  if (!isStream && !type.includes("json")) return Promise.resolve();
  const encoding = encodingOf(answer.headers["content-encoding"]);
  let source: Readable = answer;
  if (encoding !== "" && encoding !== "identity") {
    const copy = new PassThrough();
    answer.on("data", (chunk: Buffer) => copy.write(chunk));
    answer.on("end", () => copy.end());
    answer.on("close", () => {
      if (!answer.complete) copy.destroy();
    });
    source = decode(copy, encoding);
  }
  return new Promise<void>((resolve) => {
    const decoder = new StringDecoder("utf8");
    if (isStream) {
      let pending = "";
      source.on("data", (chunk: Buffer) => {
        const text = pending + decoder.write(chunk);
        const lineEnd = text.lastIndexOf("\n");
        pending = lineEnd === -1 ? text : text.slice(lineEnd + 1);
        if (lineEnd === -1 || !text.includes('"usage"')) return;
        for (const line of text.slice(0, lineEnd).split("\n")) {
          if (!line.startsWith("data:") || !line.includes('"usage"')) continue;
          try {
            reader.data(JSON.parse(line.slice(5)));
          } catch {
            // Read on the side only: the client sees the event as it came.
          }
        }
      });
    } else {
      const chunks: Buffer[] = [];
      source.on("data", (chunk: Buffer) => chunks.push(chunk));
      source.on("end", () => {
        try {
          reader.json(JSON.parse(Buffer.concat(chunks).toString("utf8")));
        } catch {
          // A body it cannot read is the client's to see, unchanged.
        }
      });
    }
    source.on("end", () => resolve());
    source.on("close", () => resolve());
    source.on("error", () => resolve());
  });
}

/** The content encodings the proxy reads, as a stream and as bytes. */
const decoders: Readonly<Record<string, { readonly stream: () => Transform; readonly bytes: (body: Buffer) => Buffer }>> = {
  gzip: { stream: () => zlib.createGunzip(), bytes: (body) => zlib.gunzipSync(body) },
  "x-gzip": { stream: () => zlib.createGunzip(), bytes: (body) => zlib.gunzipSync(body) },
  deflate: { stream: () => zlib.createInflate(), bytes: (body) => zlib.inflateSync(body) },
  br: { stream: () => zlib.createBrotliDecompress(), bytes: (body) => zlib.brotliDecompressSync(body) },
};

const encodingOf = (header: string | undefined) => (header ?? "").trim().toLowerCase();

function decode(stream: PassThrough, encoding: string): Readable {
  const decoder = decoders[encodingOf(encoding)];
  return decoder === undefined ? stream : stream.pipe(decoder.stream());
}

/** A request body, decoded from its `content-encoding`; `undefined` when the encoding is one the proxy cannot read. */
export function decodedBody(body: Buffer, encoding: string | undefined): Buffer | undefined {
  const name = encodingOf(encoding);
  if (name === "" || name === "identity") return body;
  return decoders[name]?.bytes(body);
}
