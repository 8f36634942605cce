// Owns the Chat Completions rule on tool call ids that lowering must honour whatever the
// history holds: an id is a non-empty string. An empty one (a server that sent none and
// a history from before ids were filled in) maps to a fixed id, the same every time, in
// both the assistant's `tool_calls` and the `tool` message that answers it.

/** The id to send for a tool call id from history. */
export function openAIToolId(id: string): string {
  return id === "" ? "call_unnamed" : id;
}
