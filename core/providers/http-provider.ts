// Owns what each HTTP adapter does on `send`: lower the request to its API's wire
// format, serialize it once (asking for a stream unless told not to), and POST that one
// string with the shared transport, reading the reply as an event stream or as JSON.

import type { Provider, ProviderReply, ProviderRequest, SendOptions } from "../session/provider.ts";
import {
  type ConnectionOptions,
  type Endpoint,
  postWithRetries,
  type ReplyReaders,
  readReply,
  transportEffects,
} from "./transport.ts";

/** What one model API adds to the shared HTTP plumbing. */
export interface HttpApi {
  /** The adapter's name, used in errors: `anthropic`, `openai-compatible`. */
  readonly provider: string;
  readonly url: string;
  /**
   * The API's own headers (version, key), read at each call so that a key set in the
   * environment later is used. May throw, such as `ApiKeyMissing`; then nothing is sent.
   */
  readonly headers: () => Readonly<Record<string, string>>;
  /** The request in the API's wire format. */
  readonly lower: (request: ProviderRequest) => object;
  /** Fields a streamed request adds after `stream: true`, such as `stream_options`. */
  readonly streamFields?: (request: ProviderRequest) => object;
  readonly readers: ReplyReaders<ProviderReply>;
}

/** Options of `httpProvider`: how to connect, and extra headers sent after the API's own. */
export interface HttpProviderOptions extends ConnectionOptions {
  readonly headers?: Readonly<Record<string, string>>;
}

/**
 * A Provider for `api`. Each `send` lowers the request, serializes it once, and POSTs
 * that same string on every attempt (see `postWithRetries`).
 */
export function httpProvider(api: HttpApi, options: HttpProviderOptions): Provider {
  const effects = transportEffects(options);
  const isStreaming = options.stream ?? true;

  return {
    async send(request: ProviderRequest, call: SendOptions = {}): Promise<ProviderReply> {
      const endpoint: Endpoint = {
        provider: api.provider,
        url: api.url,
        headers: {
          "content-type": "application/json",
          accept: isStreaming ? "text/event-stream" : "application/json",
          ...api.headers(),
          ...options.headers,
        },
      };
      const body = api.lower(request);
      const serialized = JSON.stringify(isStreaming ? { ...body, stream: true, ...(api.streamFields?.(request) ?? {}) } : body);
      const { onText, signal } = call;
      return postWithRetries(
        endpoint,
        serialized,
        (response, attempt) =>
          readReply(response, endpoint, api.readers, onText === undefined ? undefined : (text) => onText(text, attempt)),
        effects,
        signal,
      );
    },
  };
}
