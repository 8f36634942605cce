// Owns the retry policy of provider adapters: which failures are worth another attempt
// and how long to wait first (the server's `retry-after`, capped, or exponential backoff
// with jitter). Pure: the clock and the random source are parameters.

/** How an adapter retries 408, 429, 5xx, timeouts, network failures and broken streams. */
export interface RetryPolicy {
  /** Attempts after the first. */
  readonly maxRetries: number;
  /** Backoff before the first retry; doubles for each further retry. */
  readonly baseDelayMs: number;
  /** Upper bound of the computed backoff. */
  readonly maxDelayMs: number;
  /** Upper bound of a server-requested `retry-after` wait. */
  readonly maxRetryAfterMs: number;
}

/** Two retries, starting at half a second, backoff at most 8 s, `retry-after` honoured up to 60 s. */
export const defaultRetryPolicy: RetryPolicy = { maxRetries: 2, baseDelayMs: 500, maxDelayMs: 8_000, maxRetryAfterMs: 60_000 };

/** Whether a response status is worth retrying: request timeout, rate limit, or a server error. */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}

/**
 * The wait the server asked for, in milliseconds: `retry-after-ms`, else `retry-after`
 * as seconds or as an HTTP date (relative to `now`). `undefined` when absent or unreadable.
 */
export function requestedDelayMs(headers: Headers, now: number): number | undefined {
  const milliseconds = headers.get("retry-after-ms");
  if (milliseconds !== null && /^\s*\d+(?:\.\d+)?\s*$/.test(milliseconds)) return Number(milliseconds);
  const value = headers.get("retry-after");
  if (value === null) return undefined;
  if (/^\s*\d+(?:\.\d+)?\s*$/.test(value)) return Number(value) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/**
 * How long to wait before retry number `retry` (0 for the first retry): the server's
 * requested delay capped at `maxRetryAfterMs`, else `baseDelayMs · 2^retry` capped at
 * `maxDelayMs` and reduced by up to a quarter at random so clients spread out.
 */
export function delayBeforeRetryMs(
  policy: RetryPolicy,
  retry: number,
  requested: number | undefined,
  random: () => number,
): number {
  if (requested !== undefined) return Math.min(requested, policy.maxRetryAfterMs);
  const exponential = Math.min(policy.baseDelayMs * 2 ** retry, policy.maxDelayMs);
  return exponential * (1 - 0.25 * random());
}
