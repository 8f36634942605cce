// Owns the wrapped chronological fallback: text the model should read as host-authored
// context (a Mid-Conversation System Message or a compaction summary) carried inside a
// user turn, XML-escaped so the wrapped text can never close its own tag.

/** Escapes `&`, `<` and `>` so text can sit inside an XML-like tag. */
export function escapeXml(text: string): string {
  return text.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");
}

/** A Mid-Conversation System Message as user-turn text: `<system-update>…</system-update>`. */
export function wrapSystemUpdate(text: string): string {
  return `<system-update>${escapeXml(text)}</system-update>`;
}

/** A compaction summary as user-turn text: `<summary>…</summary>`. */
export function wrapSummary(text: string): string {
  return `<summary>${escapeXml(text)}</summary>`;
}
