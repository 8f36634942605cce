// Owns the named errors of provider adapters. Each names the provider and the URL, and
// carries what the API said, so a host can tell a refused request from an outage.

/** The API refused the request with a 4xx status that retrying would not change. */
export class ProviderRejected extends Error {
  override readonly name = "ProviderRejected";
  constructor(
    readonly provider: string,
    readonly url: string,
    readonly status: number,
    /** The API's own error message, or the start of the response body when it has none. */
    readonly apiMessage: string,
    /** The API's error type when it gives one, such as `invalid_request_error`. */
    readonly errorType?: string,
  ) {
    super(`${provider} rejected the request to ${url} with status ${status}${errorType ? ` (${errorType})` : ""}: ${apiMessage}`);
  }
}

/** The API stayed unavailable — 429, 5xx, a network failure or a broken stream — through every attempt. */
export class ProviderUnavailable extends Error {
  override readonly name = "ProviderUnavailable";
  constructor(
    readonly provider: string,
    readonly url: string,
    readonly attempts: number,
    /** The last HTTP status, when the last attempt got a response. */
    readonly status: number | undefined,
    /** What the API or the network said on the last attempt. */
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(
      `${provider} at ${url} unavailable after ${attempts} attempt${attempts === 1 ? "" : "s"}${status === undefined ? "" : ` (last status ${status})`}: ${reason}`,
      options,
    );
  }
}

/** An attempt took longer than the adapter's `timeoutMs`, and so did every retry. */
export class ProviderTimedOut extends Error {
  override readonly name = "ProviderTimedOut";
  constructor(
    readonly provider: string,
    readonly url: string,
    readonly timeoutMs: number,
    readonly attempts: number,
  ) {
    super(`${provider} at ${url} did not answer within ${timeoutMs} ms (${attempts} attempt${attempts === 1 ? "" : "s"})`);
  }
}

/** The API answered 2xx with something that is not a reply in its documented format. */
export class ProviderReplyInvalid extends Error {
  override readonly name = "ProviderReplyInvalid";
  constructor(
    readonly provider: string,
    readonly url: string,
    reason: string,
    options?: { cause?: unknown },
  ) {
    super(`${provider} at ${url} sent an invalid reply: ${reason}`, options);
  }
}

/** The adapter needs an API key and the environment variable naming it is unset or empty. */
export class ApiKeyMissing extends Error {
  override readonly name = "ApiKeyMissing";
  constructor(
    readonly provider: string,
    readonly variable: string,
  ) {
    super(`${provider}: no API key; set the environment variable ${variable} or pass apiKey`);
  }
}
