// Owns one provider call on the wire: POST a serialized body with a per-attempt
// timeout, retry what the retry policy allows after the wait it computes, and map the
// outcome to a reply or a named error. Every attempt sends the same string, so a retry
// is byte-identical and a prompt cache written by a half-finished attempt still hits.

import { ContextHostError } from "../base/errors.ts";
import { ProviderReplyInvalid } from "../session/errors.ts";
import { ProviderRejected, ProviderTimedOut, ProviderUnavailable } from "./errors.ts";
import { defaultRetryPolicy, delayBeforeRetryMs, isRetryableStatus, type RetryPolicy, requestedDelayMs } from "./retry.ts";
import { readServerSentEvents, type ServerSentEvent } from "./sse.ts";

/** Where one adapter sends its requests. */
export interface Endpoint {
  /** The adapter's name, used in errors: `anthropic`, `openai-compatible`. */
  readonly provider: string;
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
}

/** The provider and URL of an endpoint, as its errors name them. */
export function where(endpoint: Endpoint): { readonly provider: string; readonly url: string } {
  return { provider: endpoint.provider, url: endpoint.url };
}

/** The effects a transport uses; tests replace the clock, the random source and `fetch`. */
export interface TransportEffects {
  readonly fetch: typeof globalThis.fetch;
  /** Per attempt, from sending the request to the end of the reply. */
  readonly timeoutMs: number;
  readonly retry: RetryPolicy;
  readonly sleep: (milliseconds: number) => Promise<void>;
  readonly random: () => number;
  readonly now: () => number;
}

/**
 * A reply that broke off or reported an error mid-stream; worth another attempt. When the
 * attempts run out, `reason` becomes the `ProviderUnavailable`'s (this error its `cause`).
 */
export class StreamInterrupted extends ContextHostError {
  readonly provider: string;
  readonly url: string;
  /** What went wrong in the stream: `stream ended before message_stop`, the error event's text. */
  readonly reason: string;
  constructor(options: { readonly provider: string; readonly url: string; readonly reason: string }) {
    super(`${options.provider} reply stream from ${options.url} interrupted: ${options.reason}`);
    this.provider = options.provider;
    this.url = options.url;
    this.reason = options.reason;
  }
}

/** Waits with a timer. */
export const sleepWithTimer = (milliseconds: number): Promise<void> =>
  new Promise((resolve) => {
    setTimeout(resolve, milliseconds);
  });

/** How an adapter connects: the options both adapters share. */
export interface ConnectionOptions {
  /** Per attempt, from sending the request to the end of the reply. Default 10 minutes. */
  readonly timeoutMs?: number;
  /** Attempts after the first; shorthand for `retry.maxRetries`. Default 2. */
  readonly maxRetries?: number;
  /** The rest of the retry policy; see `defaultRetryPolicy`. */
  readonly retry?: Partial<RetryPolicy>;
  /** Ask for a streamed (SSE) reply. Default true; a server that answers with JSON anyway is read as JSON. */
  readonly stream?: boolean;
  /** Replaces the global `fetch`. */
  readonly fetch?: typeof globalThis.fetch;
  /** Replaces the timer that waits between attempts (tests record the waits instead). */
  readonly sleep?: (milliseconds: number) => Promise<void>;
  /** Replaces `Math.random` for backoff jitter. */
  readonly random?: () => number;
}

/** The transport effects for `options`, defaults filled in. */
export function transportEffects(options: ConnectionOptions): TransportEffects {
  return {
    fetch: options.fetch ?? globalThis.fetch,
    timeoutMs: options.timeoutMs ?? 600_000,
    retry: {
      ...defaultRetryPolicy,
      ...(options.maxRetries === undefined ? {} : { maxRetries: options.maxRetries }),
      ...options.retry,
    },
    sleep: options.sleep ?? sleepWithTimer,
    random: options.random ?? Math.random,
    now: Date.now,
  };
}

/** How one API's replies read: as one JSON document, or as an event stream. */
export interface ReplyReaders<Reply> {
  readonly fromJson: (json: unknown, endpoint: Endpoint) => Reply;
  /** Reads the stream; `onText` hears each piece of the reply's text as it arrives. */
  readonly fromStream: (
    events: AsyncIterable<ServerSentEvent>,
    endpoint: Endpoint,
    onText?: (text: string) => void,
  ) => Promise<Reply>;
}

/**
 * Reads a 2xx response by its content type — an event stream, or JSON (the
 * non-streaming fallback, also taken when a server ignores `stream: true`).
 */
export async function readReply<Reply extends { readonly text: string }>(
  response: Response,
  endpoint: Endpoint,
  readers: ReplyReaders<Reply>,
  onText?: (text: string) => void,
): Promise<Reply> {
  if (isEventStream(response)) {
    if (response.body === null) throw new ProviderReplyInvalid({ ...where(endpoint), reason: "an event stream without a body" });
    return readers.fromStream(readServerSentEvents(response.body), endpoint, onText);
  }
  const text = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    const type = response.headers.get("content-type") ?? "no content type";
    throw new ProviderReplyInvalid({
      ...where(endpoint),
      reason: `a ${type} reply that is not JSON: ${excerpt(text)}`,
      cause: error,
    });
  }
  const reply = readers.fromJson(json, endpoint);
  // Not streamed: the text arrives in one piece.
  if (reply.text !== "") onText?.(reply.text);
  return reply;
}

/** `https://host/v1/` → `https://host/v1`, so paths join with one slash. */
export function withoutTrailingSlash(url: string): string {
  return url.replace(/\/+$/, "");
}

interface Failure {
  readonly status?: number;
  readonly reason: string;
  readonly requestedDelay?: number;
  readonly isTimeout: boolean;
  readonly cause?: unknown;
}

/**
 * POSTs `body` to `endpoint` and reads a 2xx response with `readReply`. Retries 408,
 * 429 and 5xx responses, timeouts, network failures and `StreamInterrupted`; throws
 * `ProviderRejected` for other non-2xx statuses at once, `ProviderReplyInvalid` from
 * `readReply` at once, and `ProviderTimedOut` or `ProviderUnavailable` when retries run out.
 */
export async function postWithRetries<Reply>(
  endpoint: Endpoint,
  body: string,
  readReply: (response: Response, attempt: number) => Promise<Reply>,
  effects: TransportEffects,
  signal?: AbortSignal,
): Promise<Reply> {
  for (let attempt = 1; ; attempt++) {
    signal?.throwIfAborted();
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), effects.timeoutMs);
    // The caller's abort ends this attempt too, and no other is made.
    const cancel = () => controller.abort(signal?.reason);
    signal?.addEventListener("abort", cancel);
    let failure: Failure;
    try {
      const response = await effects.fetch(endpoint.url, {
        method: "POST",
        headers: endpoint.headers,
        body,
        signal: controller.signal,
      });
      if (response.ok) return await readReply(response, attempt);
      const apiError = apiErrorOf(await response.text());
      if (!isRetryableStatus(response.status)) {
        throw new ProviderRejected({
          ...where(endpoint),
          status: response.status,
          apiMessage: apiError.message,
          ...(apiError.type === undefined ? {} : { errorType: apiError.type }),
        });
      }
      failure = {
        status: response.status,
        reason: apiError.message,
        requestedDelay: requestedDelayMs(response.headers, effects.now()),
        isTimeout: false,
      };
    } catch (error) {
      signal?.throwIfAborted();
      if (controller.signal.aborted) {
        failure = { reason: `no answer within ${effects.timeoutMs} ms`, isTimeout: true, cause: error };
      } else if (error instanceof ProviderRejected || error instanceof ProviderReplyInvalid) {
        throw error;
      } else {
        failure = { reason: describe(error), isTimeout: false, cause: error };
      }
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener("abort", cancel);
    }
    if (attempt > effects.retry.maxRetries) {
      if (failure.isTimeout) throw new ProviderTimedOut({ ...where(endpoint), timeoutMs: effects.timeoutMs, attempts: attempt });
      throw new ProviderUnavailable({
        ...where(endpoint),
        attempts: attempt,
        ...(failure.status === undefined ? {} : { status: failure.status }),
        reason: failure.reason,
        cause: failure.cause,
      });
    }
    await effects.sleep(delayBeforeRetryMs(effects.retry, attempt - 1, failure.requestedDelay, effects.random));
  }
}

/** Whether a 2xx response is an event stream rather than one JSON document. */
export function isEventStream(response: Response): boolean {
  return (response.headers.get("content-type") ?? "").toLowerCase().includes("text/event-stream");
}

/**
 * The error message and type in an API error body. Understands Anthropic's and
 * OpenAI's `{ error: { type, message } }`, and the `{ error: "…" }`, `{ message }` and
 * `{ detail }` of compatible servers; otherwise the start of the body.
 */
export function apiErrorOf(text: string): { message: string; type?: string } {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return { message: excerpt(text) };
  }
  if (isRecord(json)) {
    const error = json.error;
    if (isRecord(error) && typeof error.message === "string") {
      return typeof error.type === "string" ? { message: error.message, type: error.type } : { message: error.message };
    }
    if (typeof error === "string") return { message: error };
    if (typeof json.message === "string") return { message: json.message };
    if (typeof json.detail === "string") return { message: json.detail };
  }
  return { message: excerpt(text) };
}

function excerpt(text: string): string {
  const trimmed = text.trim();
  if (trimmed === "") return "(empty body)";
  return trimmed.length > 500 ? `${trimmed.slice(0, 500)}…` : trimmed;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** `fetch failed: ECONNREFUSED` rather than just `fetch failed`; a broken stream's reason. */
function describe(error: unknown): string {
  // The provider and URL are the `ProviderUnavailable`'s own.
  if (error instanceof StreamInterrupted) return error.reason;
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause;
  const code = isRecord(cause) && typeof cause.code === "string" ? cause.code : undefined;
  return code === undefined ? error.message : `${error.message}: ${code}`;
}
