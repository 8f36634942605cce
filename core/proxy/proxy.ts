// Owns the context proxy (SPEC §9): an HTTP server that agents whose code the user does not
// own point their API base URL at. On each conversation request (Anthropic Messages, OpenAI
// Responses, Chat Completions) it runs the engine's Safe Provider-Turn Boundary for the
// request's conversation and forwards the client's body with the Baseline and the admitted
// Mid-Conversation System Messages in place; anything else passes through unchanged. The
// proxy never fails a request for want of context: a source that fails, a boundary that
// cannot run, a body it cannot place context in, are forwarded as the client sent them.

import { timingSafeEqual } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { DeadlineExceeded, withinDeadline } from "../base/deadline.ts";
import { SettingInvalid } from "../base/errors.ts";
import { Listeners } from "../base/listeners.ts";
import { RecentMap } from "../base/recent-map.ts";
import { type ContextEngine, type ContextEngineOptions, createContextEngine } from "../host/engine.ts";
import { anthropicCapabilities } from "../providers/anthropic-lowering.ts";
import { openAICapabilities, openAIModels } from "../providers/openai-lowering.ts";
import type { TokenUsage } from "../session/provider.ts";
import { type BoundaryEvent, checkLocation } from "../session/runtime.ts";
import type { EpochReason } from "../session/store/store.ts";
import { anthropicMessages } from "./anthropic-messages.ts";
import { canonicalJson } from "./canonical.ts";
import { chatCompletions } from "./chat-completions.ts";
import {
  clientSessionOf,
  conversationSessionId,
  credentialNamespace,
  KnownFolders,
  locationOf,
  proxyHeaders,
} from "./conversation.ts";
import { openAIResponses } from "./openai-responses.ts";
import { decodedBody, forwardedHeaders, type RelayOutcome, relay } from "./relay.ts";
import {
  type ApiFamily,
  BodyInvalid,
  type ConversationRequest,
  type ModelPlacement,
  type WireFormat,
  type WireName,
} from "./wire.ts";

/** Where each API family's requests go by default. */
export const defaultUpstreams: Readonly<Record<ApiFamily, string>> = {
  anthropic: "https://api.anthropic.com",
  openai: "https://api.openai.com",
};

/** Options of `createContextProxy`: an engine's (or an engine), and where the proxy listens and forwards. */
export interface ContextProxyOptions extends ContextEngineOptions {
  /** An engine to run the boundaries on (the proxy does not close it); default: one made from these options. */
  readonly engine?: ContextEngine;
  /** Port to listen on (default 4100; 0 picks a free one). */
  readonly port?: number;
  /** Address to listen on (default `127.0.0.1`). Any other needs `token`. */
  readonly host?: string;
  /** Base URLs of the upstream APIs; a request's path and query are appended as received. */
  readonly upstreams?: { readonly anthropic?: string; readonly openai?: string };
  /** A secret clients send as the `x-context-host-token` header; required to listen beyond loopback. */
  readonly token?: string;
  /** Where a session works when neither a header nor the agent says (default: the working folder). */
  readonly location?: string;
  /** The largest request body read, in bytes (default 32 MiB); a larger one gets a 413. */
  readonly maxBodyBytes?: number;
  /** How long the upstream may take to start its response (default 10 minutes); then a 504. */
  readonly upstreamTimeoutMs?: number;
  /** How long a boundary may take (default 10 s); then the request goes on without new context. */
  readonly boundaryTimeoutMs?: number;
  /**
   * Whether a model takes native instruction messages mid-conversation (default: the providers'
   * capability tables). Asked once per API and model: the answer is kept while the proxy runs.
   */
  readonly nativeSystemMessages?: (api: ApiFamily, model: string) => boolean;
}

/** What the proxy did with one conversation request, once its response ended. */
export interface ProxyBoundaryEvent {
  /** The engine session: the conversation, inside the client's credential namespace. */
  readonly sessionId: string;
  readonly wire: WireName;
  readonly model: string;
  readonly location: string;
  /** `with-context`: the Baseline and updates were placed; `unchanged`: forwarded as the client sent it (`reason` says why). */
  readonly forwarded: "with-context" | "unchanged";
  readonly reason?: string;
  /** The request's Context Epoch. */
  readonly epoch?: { readonly number: number; readonly reason: EpochReason };
  /** The Baseline, when this request started the epoch. */
  readonly baseline?: string;
  /** The Mid-Conversation System Message this request admitted, if any. */
  readonly update?: string;
  /** How many updates the forwarded request carries. */
  readonly updates: number;
  /** Bytes of the body forwarded. */
  readonly bytes: number;
  /** The upstream's status; none when it was never answered. */
  readonly status?: number;
  /** How the exchange ended. */
  readonly outcome: "relayed" | "unreachable" | "timed-out" | "cancelled" | "broken";
  /** What went wrong upstream, when the outcome is `unreachable` or `broken`. */
  readonly error?: string;
  /** Token usage the response reported (cache read, written, uncached input, output). */
  readonly usage?: TokenUsage;
  /** Milliseconds: the boundary, and the whole exchange. */
  readonly timings: { readonly boundaryMs: number; readonly totalMs: number };
}

/** A running context proxy. */
export interface ContextProxy {
  /** `http://HOST:PORT`, the base URL clients point at. */
  readonly url: string;
  readonly engine: ContextEngine;
  /** Calls `listener` after each conversation request's response ended. Returns an unsubscribe. */
  onBoundary(listener: (event: ProxyBoundaryEvent) => void): () => void;
  /** The latest conversation requests (up to 500), oldest first. */
  recent(): readonly ProxyBoundaryEvent[];
  /** Stops listening, lets requests in flight end (up to 5 s), and closes the engine it made. */
  close(): Promise<void>;
}

/** What `prepare` decided for a conversation request. */
type Prepared =
  | { readonly kind: "reject"; readonly status: number; readonly message: string }
  /** The client left before there was anything to send. */
  | { readonly kind: "gone" }
  | {
      readonly kind: "forward";
      readonly body: Buffer | string;
      readonly headers: http.OutgoingHttpHeaders;
      readonly event: Omit<ProxyBoundaryEvent, "bytes" | "status" | "outcome" | "error" | "usage" | "timings">;
      readonly boundaryMs: number;
    };

const wires: readonly { readonly suffix: string; readonly wire: WireFormat }[] = [
  { suffix: "/messages", wire: anthropicMessages },
  { suffix: "/responses", wire: openAIResponses },
  { suffix: "/chat/completions", wire: chatCompletions },
];

const defaultMaxBodyBytes = 32 * 1024 * 1024;
const recentLimit = 500;
const loopback = /^(?:127\.\d+\.\d+\.\d+|::1|localhost)$/;

function checkUpstream(name: string, value: string): URL {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new SettingInvalid({ setting: `upstreams.${name}`, reason: `${JSON.stringify(value)} is not a URL` });
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new SettingInvalid({ setting: `upstreams.${name}`, reason: `${value} is not an http(s) URL` });
  }
  return url;
}

/** Joins an upstream base URL and a request's path and query as received. @internal */
export function upstreamUrl(base: URL, requestPath: string): URL {
  const joined = new URL(base.href);
  const basePath = base.pathname.replace(/\/+$/, "");
  const queryAt = requestPath.indexOf("?");
  joined.pathname = basePath + (queryAt === -1 ? requestPath : requestPath.slice(0, queryAt));
  joined.search = queryAt === -1 ? "" : requestPath.slice(queryAt);
  return joined;
}

/** Which API family a request that is not a conversation belongs to, by its headers and path. */
function familyOf(request: http.IncomingMessage, pathname: string): ApiFamily {
  if (request.headers["anthropic-version"] !== undefined || request.headers["x-api-key"] !== undefined) return "anthropic";
  return pathname.includes("/messages") ? "anthropic" : "openai";
}

function placementOf(api: ApiFamily, model: string, decide: ContextProxyOptions["nativeSystemMessages"]): ModelPlacement {
  if (api === "anthropic") {
    return { isNative: decide?.(api, model) ?? anthropicCapabilities(model).nativeSystemMessages, role: "system" };
  }
  const capabilities = openAICapabilities(model, openAIModels);
  return {
    isNative: decide?.(api, model) ?? capabilities.systemUpdateRole !== "wrapped",
    role: capabilities.instructionRole,
  };
}

/** Where each model takes its context, decided once per API and model (the 256 most recently used kept). */
class Placements {
  readonly #decided = new RecentMap<string, ModelPlacement>(256);
  readonly #decide: ContextProxyOptions["nativeSystemMessages"];

  constructor(decide: ContextProxyOptions["nativeSystemMessages"]) {
    this.#decide = decide;
  }

  of(api: ApiFamily, model: string): ModelPlacement {
    const key = `${api}\n${model}`;
    let placement = this.#decided.get(key);
    if (placement === undefined) {
      placement = placementOf(api, model, this.#decide);
      this.#decided.set(key, placement);
    }
    return placement;
  }
}

/** Reads a request body up to `limit` bytes; `undefined` when it is longer. */
function readBody(request: http.IncomingMessage, limit: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let length = 0;
    let isOver = false;
    request.on("data", (chunk: Buffer) => {
      if (isOver) return;
      length += chunk.length;
      if (length > limit) {
        isOver = true;
        resolve(undefined);
        return;
      }
      chunks.push(chunk);
    });
    request.on("end", () => {
      if (!isOver) resolve(Buffer.concat(chunks, length));
    });
    request.on("error", reject);
  });
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Starts a context proxy: the engine (unless one is given) and the HTTP server. */
export async function createContextProxy(options: ContextProxyOptions = {}): Promise<ContextProxy> {
  const host = options.host ?? "127.0.0.1";
  const port = options.port ?? 4100;
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new SettingInvalid({ setting: "port", reason: `${port} is not a port (0 to 65535)` });
  }
  if (!loopback.test(host) && (options.token === undefined || options.token.length < 16)) {
    throw new SettingInvalid({
      setting: "host",
      reason: `listening on ${host} (beyond this machine) needs a token of 16 characters or more, sent by clients as the ${proxyHeaders.token} header`,
    });
  }
  const upstreams: Record<ApiFamily, URL> = {
    anthropic: checkUpstream("anthropic", options.upstreams?.anthropic ?? defaultUpstreams.anthropic),
    openai: checkUpstream("openai", options.upstreams?.openai ?? defaultUpstreams.openai),
  };
  const fallbackLocation = checkLocation(options.location ?? process.cwd());
  const maxBodyBytes = options.maxBodyBytes ?? defaultMaxBodyBytes;
  const upstreamTimeoutMs = options.upstreamTimeoutMs ?? 600_000;
  const boundaryTimeoutMs = options.boundaryTimeoutMs ?? 10_000;
  const token = options.token === undefined ? undefined : Buffer.from(options.token);

  const engine = options.engine ?? (await createContextEngine(options));
  const listeners = new Listeners<ProxyBoundaryEvent>();
  const recent: ProxyBoundaryEvent[] = [];
  // What each session's last boundary committed: the engine announces it before `boundary` resolves.
  const committed = new Map<string, BoundaryEvent>();
  const stopWatching = engine.onBoundary((event) => {
    if (event.sessionId.startsWith("proxy/")) committed.set(event.sessionId, event);
  });

  const announce = (event: ProxyBoundaryEvent) => {
    recent.push(event);
    if (recent.length > recentLimit) recent.splice(0, recent.length - recentLimit);
    listeners.emit(event);
  };

  const sendError = (response: http.ServerResponse, wire: WireFormat | ApiFamily, status: number, message: string) => {
    if (response.headersSent) {
      response.destroy();
      return;
    }
    const body = typeof wire === "string" ? (wire === "anthropic" ? anthropicMessages : chatCompletions) : wire;
    const json = JSON.stringify(body.errorBody(status, `context-host proxy: ${message}`));
    response.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(json) });
    response.end(json);
  };

  /** Answers a relay that produced no response of its own with the proxy's error. */
  const answerFailure = (response: http.ServerResponse, wire: WireFormat | ApiFamily, outcome: RelayOutcome, url: URL) => {
    if (outcome.kind === "unreachable")
      sendError(response, wire, 502, `could not reach the upstream ${url.origin}: ${outcome.reason}`);
    else if (outcome.kind === "timed-out") {
      sendError(response, wire, 504, `the upstream ${url.origin} did not answer within ${upstreamTimeoutMs} ms`);
    }
  };

  const isAuthorized = (request: http.IncomingMessage): boolean => {
    if (token === undefined) return true;
    const sent = request.headers[proxyHeaders.token];
    const given = Buffer.from(typeof sent === "string" ? sent : "");
    return given.length === token.length && timingSafeEqual(given, token);
  };

  const passThrough = async (request: http.IncomingMessage, response: http.ServerResponse, pathname: string) => {
    const api = familyOf(request, pathname);
    const url = upstreamUrl(upstreams[api], request.url ?? "/");
    const outcome = await relay(
      {
        url,
        method: request.method ?? "GET",
        headers: forwardedHeaders(request.headers),
        body: request,
        timeoutMs: upstreamTimeoutMs,
      },
      request,
      response,
    );
    answerFailure(response, api, outcome, url);
  };

  /**
   * Decides what to forward for a conversation request: the client's body with the context in
   * place, the body unchanged (and why), or an error of the proxy's own. Everything large it
   * reads (the body, its parse, the placed copy) is left behind once the decision is made.
   */
  const folders = new KnownFolders();
  const placements = new Placements(options.nativeSystemMessages);
  const prepare = async (request: http.IncomingMessage, response: http.ServerResponse, wire: WireFormat): Promise<Prepared> => {
    const raw = await readBody(request, maxBodyBytes);
    if (raw === undefined) {
      request.resume();
      return {
        kind: "reject",
        status: 413,
        message: `the request body is larger than ${maxBodyBytes} bytes; nothing was forwarded`,
      };
    }
    const unchanged = (reason: string, model = "", sessionId = "", location = fallbackLocation): Prepared => ({
      kind: "forward",
      body: raw,
      headers: forwardedHeaders(request.headers),
      event: { sessionId, wire: wire.name, model, location, forwarded: "unchanged", reason, updates: 0 },
      boundaryMs: 0,
    });
    let text: Buffer | undefined;
    try {
      text = decodedBody(raw, request.headers["content-encoding"]);
    } catch (error) {
      const message = `the request body is not valid ${request.headers["content-encoding"]}: ${messageOf(error)}`;
      return { kind: "reject", status: 400, message };
    }
    if (text === undefined)
      return unchanged(`its content-encoding ${request.headers["content-encoding"]} is one the proxy cannot read`);
    let body: unknown;
    try {
      body = JSON.parse(text.toString("utf8"));
    } catch (error) {
      return {
        kind: "reject",
        status: 400,
        message: `the request body is not JSON (${messageOf(error)}); nothing was forwarded`,
      };
    }
    let read: ConversationRequest;
    try {
      read = wire.read(body);
    } catch (error) {
      if (!(error instanceof BodyInvalid)) throw error;
      return { kind: "reject", status: 400, message: `${error.message}; nothing was forwarded` };
    }
    let location: string;
    try {
      location = locationOf(request.headers, read, fallbackLocation, folders);
    } catch (error) {
      return { kind: "reject", status: 400, message: `header ${proxyHeaders.location}: ${messageOf(error)}` };
    }
    const sessionId = conversationSessionId(credentialNamespace(request.headers), clientSessionOf(request.headers, read), read);
    if (read.passThrough !== undefined) return unchanged(read.passThrough, read.model, sessionId, location);
    const boundaryStartedAt = performance.now();
    const history = read.history.map((index) => read.items[index]);
    let answer: Awaited<ReturnType<ContextEngine["boundary"]>>;
    try {
      answer = await withinDeadline(
        () =>
          engine.boundary(sessionId, {
            location,
            provider: wire.api,
            model: read.model,
            messages: history,
            digest: canonicalJson,
          }),
        boundaryTimeoutMs,
        "the boundary",
      );
    } catch (error) {
      committed.delete(sessionId);
      const why = error instanceof DeadlineExceeded ? `took longer than ${boundaryTimeoutMs} ms` : `failed: ${messageOf(error)}`;
      return unchanged(`the boundary ${why}`, read.model, sessionId, location);
    }
    const boundaryMs = performance.now() - boundaryStartedAt;
    const admitted = committed.get(sessionId);
    committed.delete(sessionId);
    if (response.destroyed) return { kind: "gone" }; // the client left during the boundary: nothing to send
    const forwarded = wire.place(
      body as Record<string, unknown>,
      read,
      { baseline: answer.baseline, updates: answer.updates },
      placements.of(wire.api, read.model),
    );
    return {
      kind: "forward",
      body: JSON.stringify(forwarded),
      headers: forwardedHeaders(request.headers, { dropContentEncoding: true }),
      event: {
        sessionId,
        wire: wire.name,
        model: read.model,
        location,
        forwarded: "with-context",
        epoch: answer.epoch,
        ...(admitted?.baseline === undefined ? {} : { baseline: admitted.baseline }),
        ...(admitted?.update === undefined ? {} : { update: admitted.update }),
        updates: answer.updates.length,
      },
      boundaryMs,
    };
  };

  const converse = async (request: http.IncomingMessage, response: http.ServerResponse, wire: WireFormat) => {
    const startedAt = performance.now();
    const url = upstreamUrl(upstreams[wire.api], request.url ?? "/");
    const prepared = await prepare(request, response, wire);
    if (prepared.kind === "reject") {
      sendError(response, wire, prepared.status, prepared.message);
      return;
    }
    if (prepared.kind === "gone") return;
    const { event, boundaryMs } = prepared;
    const bytes = typeof prepared.body === "string" ? Buffer.byteLength(prepared.body) : prepared.body.length;
    const usage = wire.usageReader();
    const outcome = await relay(
      { url, method: "POST", headers: prepared.headers, body: prepared.body, timeoutMs: upstreamTimeoutMs, usage },
      request,
      response,
    );
    answerFailure(response, wire, outcome, url);
    const found = usage.usage();
    announce({
      ...event,
      bytes,
      ...("status" in outcome && outcome.status !== undefined ? { status: outcome.status } : {}),
      outcome: outcome.kind,
      ...("reason" in outcome ? { error: outcome.reason } : {}),
      ...(found === undefined ? {} : { usage: found }),
      timings: { boundaryMs, totalMs: performance.now() - startedAt },
    });
  };

  const inFlight = new Set<Promise<void>>();
  const server = http.createServer((request, response) => {
    const pathname = (request.url ?? "/").split("?")[0] as string;
    const route = request.method === "POST" ? wires.find((entry) => pathname.endsWith(entry.suffix)) : undefined;
    const work = (async () => {
      if (!isAuthorized(request)) {
        sendError(response, route?.wire ?? familyOf(request, pathname), 401, `missing or wrong ${proxyHeaders.token} header`);
        request.resume();
        return;
      }
      if (route === undefined) await passThrough(request, response, pathname);
      else await converse(request, response, route.wire);
    })().catch((error: unknown) => {
      sendError(response, route?.wire ?? familyOf(request, pathname), 500, `internal error: ${messageOf(error)}`);
    });
    inFlight.add(work);
    void work.finally(() => inFlight.delete(work));
  });
  server.requestTimeout = 0;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  }).catch(async (error: unknown) => {
    stopWatching();
    if (options.engine === undefined) await engine.close();
    const code = (error as NodeJS.ErrnoException).code;
    throw new SettingInvalid({
      setting: "port",
      reason: code === "EADDRINUSE" ? `${host}:${port} is in use (choose another, or 0 for any free port)` : messageOf(error),
    });
  });
  const address = server.address() as AddressInfo;
  const shownHost = address.family === "IPv6" ? `[${address.address}]` : address.address;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${shownHost}:${address.port}`,
    engine,
    onBoundary: (listener) => listeners.add(listener),
    recent: () => recent.slice(),
    close() {
      closing ??= (async () => {
        const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeIdleConnections();
        const grace = new Promise<void>((resolve) => setTimeout(resolve, 5000).unref());
        await Promise.race([Promise.allSettled([...inFlight]), grace]);
        server.closeAllConnections();
        await stopped;
        stopWatching();
        if (options.engine === undefined) await engine.close();
      })();
      return closing;
    },
  };
}
