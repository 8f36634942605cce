// The retry policy: what is retried, how long the server may make us wait, and backoff.

import { expect } from "chai";
import { defaultRetryPolicy } from "../../core/providers/index.ts";
import { delayBeforeRetryMs, isRetryableStatus, requestedDelayMs } from "../../core/providers/retry.ts";

const now = Date.parse("2026-01-01T00:00:00Z");

describe("Retry policy", () => {
  it("retries request timeouts, rate limits and server errors, not other client errors", () => {
    expect([408, 429, 500, 503, 529].every(isRetryableStatus)).to.equal(true);
    expect([400, 401, 403, 404, 413, 422].some(isRetryableStatus)).to.equal(false);
  });

  it("reads retry-after as seconds, as an HTTP date, and retry-after-ms first", () => {
    expect(requestedDelayMs(new Headers({ "retry-after": "3" }), now)).to.equal(3000);
    expect(requestedDelayMs(new Headers({ "retry-after": "Thu, 01 Jan 2026 00:00:07 GMT" }), now)).to.equal(7000);
    expect(requestedDelayMs(new Headers({ "retry-after": "Wed, 31 Dec 2025 23:59:00 GMT" }), now)).to.equal(0);
    expect(requestedDelayMs(new Headers({ "retry-after": "3", "retry-after-ms": "250" }), now)).to.equal(250);
    expect(requestedDelayMs(new Headers({ "retry-after": "soon" }), now)).to.equal(undefined);
    expect(requestedDelayMs(new Headers(), now)).to.equal(undefined);
  });

  it("waits what the server asked, capped at maxRetryAfterMs", () => {
    expect(delayBeforeRetryMs(defaultRetryPolicy, 0, 2000, () => 0.5)).to.equal(2000);
    expect(delayBeforeRetryMs(defaultRetryPolicy, 0, 3_600_000, () => 0.5)).to.equal(defaultRetryPolicy.maxRetryAfterMs);
  });

  it("otherwise backs off exponentially up to maxDelayMs, jittered down by at most a quarter", () => {
    const policy = { ...defaultRetryPolicy, baseDelayMs: 100, maxDelayMs: 1000 };
    expect([0, 1, 2, 3, 4].map((retry) => delayBeforeRetryMs(policy, retry, undefined, () => 0))).to.deep.equal([
      100, 200, 400, 800, 1000,
    ]);
    expect(delayBeforeRetryMs(policy, 1, undefined, () => 1)).to.equal(150);
  });
});
