// Owns what identifies a client's message across requests: its JSON with the client's cache
// markers (`cache_control`) left out and a string `content` read as one text block, so a
// client that moves its breakpoints or rewrites a string as a block sends the same message.

import { createHash } from "node:crypto";

// In JSON text a string escapes its quotes, so an unescaped `"cache_control":{` or
// `"content":"` is always a key and its value, never part of a string: the canonical form is
// the native `JSON.stringify` with those rewritten. A cache marker is a flat object.
const cacheMarkerAfter = /,"cache_control":\{[^{}]*\}/g;
const cacheMarkerBefore = /"cache_control":\{[^{}]*\},?/g;
const stringContent = /"content":("[^"\\]*(?:\\.[^"\\]*)*")/g;

/** The JSON of `value` as the proxy compares it: no `cache_control` at any depth, string `content` as `[{type:"text",text}]`. */
export function canonicalJson(value: unknown): string {
  let json = JSON.stringify(value) ?? "null";
  if (json.includes('"cache_control":{')) json = json.replace(cacheMarkerAfter, "").replace(cacheMarkerBefore, "");
  if (json.includes('"content":"')) json = json.replace(stringContent, '"content":[{"type":"text","text":$1}]');
  return json;
}

/** SHA-256 (hex) of texts, each ended by a NUL (so the list, not only the concatenation, is named). */
export function digestOf(parts: readonly string[]): string {
  const hash = createHash("sha256");
  for (const part of parts) hash.update(part).update("\u0000");
  return hash.digest("hex");
}
