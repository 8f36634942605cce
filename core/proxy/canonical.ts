// Owns what identifies a client's message across requests: its JSON with the client's cache
// markers (`cache_control`) left out and a string `content` read as one text block, so a
// client that moves its breakpoints or rewrites a string as a block sends the same message.

import { createHash } from "node:crypto";

/**
 * The JSON of `value` as the proxy compares it: no `cache_control` at any depth, string
 * `content` as `[{type:"text",text}]`. Most messages have neither, and for them it is their
 * `JSON.stringify` (native, so taken first): in JSON text an unescaped `"cache_control":` or
 * `"content":"` can only be a key, never part of a string, which escapes its quotes.
 */
export function canonicalJson(value: unknown): string {
  const json = JSON.stringify(value) ?? "null";
  return json.includes('"cache_control":') || json.includes('"content":"') ? canonicalOf(value) : json;
}

function canonicalOf(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
  if (Array.isArray(value)) {
    let out = "[";
    for (let i = 0; i < value.length; i++) out += `${i === 0 ? "" : ","}${canonicalOf(value[i])}`;
    return `${out}]`;
  }
  let out = "{";
  let isFirst = true;
  for (const key in value) {
    if (key === "cache_control") continue;
    const field = (value as Record<string, unknown>)[key];
    if (field === undefined || typeof field === "function") continue;
    const json =
      key === "content" && typeof field === "string" ? `[{"type":"text","text":${JSON.stringify(field)}}]` : canonicalJson(field);
    out += `${isFirst ? "" : ","}${JSON.stringify(key)}:${json}`;
    isFirst = false;
  }
  return `${out}}`;
}

/** SHA-256 (hex) of texts, each ended by a NUL (so the list, not only the concatenation, is named). */
export function digestOf(parts: readonly string[]): string {
  const hash = createHash("sha256");
  for (const part of parts) hash.update(part).update("\u0000");
  return hash.digest("hex");
}
