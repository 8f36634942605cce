// Owns the named errors of provider adapters (decision 011: one options object each).
// Each names the provider and the URL, and carries what the API said, so a host can tell
// a refused request from an outage. `ProviderReplyInvalid` belongs to the Provider port
// (core/session/errors.ts): the runtime raises it too.

import { ContextHostError } from "../base/errors.ts";

/** The API refused the request with a 4xx status that retrying would not change. */
export class ProviderRejected extends ContextHostError {
  readonly provider: string;
  readonly url: string;
  readonly status: number;
  /** The API's own error message, or the start of the response body when it has none. */
  readonly apiMessage: string;
  /** The API's error type when it gives one, such as `invalid_request_error`. */
  readonly errorType: string | undefined;
  constructor(options: {
    readonly provider: string;
    readonly url: string;
    readonly status: number;
    readonly apiMessage: string;
    readonly errorType?: string;
  }) {
    const { provider, url, status, apiMessage, errorType } = options;
    super(`${provider} rejected the request to ${url} with status ${status}${errorType ? ` (${errorType})` : ""}: ${apiMessage}`);
    this.provider = provider;
    this.url = url;
    this.status = status;
    this.apiMessage = apiMessage;
    this.errorType = errorType;
  }
}

/** The API stayed unavailable — 429, 5xx, a network failure or a broken stream — through every attempt. */
export class ProviderUnavailable extends ContextHostError {
  readonly provider: string;
  readonly url: string;
  readonly attempts: number;
  /** The last HTTP status, when the last attempt got a response. */
  readonly status: number | undefined;
  /** What the API or the network said on the last attempt. */
  readonly reason: string;
  constructor(options: {
    readonly provider: string;
    readonly url: string;
    readonly attempts: number;
    readonly status?: number;
    readonly reason: string;
    readonly cause?: unknown;
  }) {
    const { provider, url, attempts, status, reason } = options;
    super(
      `${provider} at ${url} unavailable after ${attempts} attempt${attempts === 1 ? "" : "s"}${status === undefined ? "" : ` (last status ${status})`}: ${reason}`,
      options.cause === undefined ? undefined : { cause: options.cause },
    );
    this.provider = provider;
    this.url = url;
    this.attempts = attempts;
    this.status = status;
    this.reason = reason;
  }
}

/** An attempt took longer than the adapter's `timeoutMs`, and so did every retry. */
export class ProviderTimedOut extends ContextHostError {
  readonly provider: string;
  readonly url: string;
  readonly timeoutMs: number;
  readonly attempts: number;
  constructor(options: {
    readonly provider: string;
    readonly url: string;
    readonly timeoutMs: number;
    readonly attempts: number;
  }) {
    const { provider, url, timeoutMs, attempts } = options;
    super(`${provider} at ${url} did not answer within ${timeoutMs} ms (${attempts} attempt${attempts === 1 ? "" : "s"})`);
    this.provider = provider;
    this.url = url;
    this.timeoutMs = timeoutMs;
    this.attempts = attempts;
  }
}

/** The adapter needs an API key and the environment variable naming it is unset or empty. */
export class ApiKeyMissing extends ContextHostError {
  readonly provider: string;
  readonly variable: string;
  constructor(options: { readonly provider: string; readonly variable: string }) {
    super(`${options.provider}: no API key; set the environment variable ${options.variable} or pass apiKey`);
    this.provider = options.provider;
    this.variable = options.variable;
  }
}
