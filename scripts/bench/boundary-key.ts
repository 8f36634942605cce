// Shared by the multi-process benches (`two-hosts`, `fleet`): what one provider call was
// for. A boundary's request is rebuilt from durable state byte for byte (decision 030),
// and it carries its session id, so two calls for the same boundary of the same session
// send the same request and get the same key; calls for different boundaries never do
// (each boundary extends the session's history).

import { createHash } from "node:crypto";
import type { ProviderRequest } from "../../core/session/provider.ts";

/** A short hex key of the boundary a request was sent for. */
export function boundaryKey(request: ProviderRequest): string {
  return createHash("sha256").update(JSON.stringify(request)).digest("hex").slice(0, 20);
}

/** Items beyond the first occurrence of each: `list.length - distinct(list)`. */
export function surplus(list: readonly string[]): number {
  return list.length - new Set(list).size;
}
