// Owns where the proxy puts context in a client's list of messages (or Responses input
// items), the same for the three wire formats: each admitted Mid-Conversation System
// Message after the history item it was admitted after, as a native instruction message
// where the model takes one and the APIs' rules allow it (after a user turn or a tool
// result, never directly before a user turn, never two in a row: merged into an adjacent
// client instruction message, our text first), else as wrapped `<system-update>` text in a
// user turn. Everything the client sent stays, in its order. Placement depends only on the
// items and the updates, so a request that repeats a history repeats its bytes.

import { wrapSystemUpdate } from "../providers/wrapped-text.ts";

/** One item of a client's list: a message, or a Responses input item. */
export type Item = Readonly<Record<string, unknown>>;

/** An admitted update: after `position` history items. */
export interface PlacedUpdate {
  readonly position: number;
  readonly text: string;
}

/** How one wire format's items look and how the proxy builds its own. */
export interface ItemShapes {
  /** A client instruction message (`role: "system"` or `"developer"`): not part of the history. */
  isInstruction(item: Item): boolean;
  /** A user turn (for Anthropic, tool results travel in user turns too). */
  isUserTurn(item: Item): boolean;
  /** An item that settles a tool call (Chat's `role: "tool"`, Responses' `*_output` items). */
  isToolResult(item: Item): boolean;
  /** A native Mid-Conversation System Message holding `texts` in order. */
  nativeUpdate(texts: readonly string[]): Item;
  /** A client instruction message with `texts` put before its own content. */
  mergeNative(item: Item, texts: readonly string[]): Item;
  /** A user turn with `texts` (already wrapped) after its own content. */
  appendToUser(item: Item, texts: readonly string[]): Item;
  /** A new user turn holding `texts` (already wrapped). */
  userTurn(texts: readonly string[]): Item;
  /** The Baseline as an instruction message, for the wires that carry it in the list (not Anthropic's, in `system`). */
  baseline?(text: string): Item;
}

/** The client's list with the context in place: the Baseline at `leading` (when the wire carries it there) and the updates. */
export function placeContext(
  list: { readonly items: readonly Item[]; readonly history: readonly number[]; readonly leading: number },
  context: { readonly baseline: string; readonly updates: readonly PlacedUpdate[] },
  shapes: ItemShapes,
  isNative: boolean,
): Item[] {
  const out = placeUpdates(list.items, list.history, context.updates, shapes, isNative, list.leading);
  if (shapes.baseline !== undefined) out.splice(list.leading, 0, shapes.baseline(context.baseline));
  return out;
}

/**
 * The client's items with the updates in place. `history` lists the indices of the items
 * the engine saw (the client's instruction messages are not among them); `leading` is the
 * index the Baseline goes at (an update at position 0 goes there too, after the Baseline).
 */
function placeUpdates(
  items: readonly Item[],
  history: readonly number[],
  updates: readonly PlacedUpdate[],
  shapes: ItemShapes,
  isNative: boolean,
  leading: number,
): Item[] {
  const out = items.slice();
  if (updates.length === 0) return out;
  const byItem = new Map<number, string[]>();
  for (const update of updates) {
    const position = Math.min(update.position, history.length);
    let at = position === 0 ? -1 : (history[position - 1] as number);
    // An update follows the newest user turn or tool result: admitted after an assistant turn
    // (a prefill the request ends with, completed in the next request), it goes before it.
    while (at >= 0 && !shapes.isUserTurn(items[at] as Item) && !shapes.isToolResult(items[at] as Item)) at--;
    const texts = byItem.get(at);
    if (texts === undefined) byItem.set(at, [update.text]);
    else texts.push(update.text);
  }
  // From the last item back, so an insertion never moves an item still to be placed after.
  for (const at of [...byItem.keys()].sort((a, b) => b - a)) {
    placeAfter(out, at, byItem.get(at) as string[], shapes, isNative, leading);
  }
  return out;
}

function placeAfter(
  out: Item[],
  at: number,
  texts: readonly string[],
  shapes: ItemShapes,
  isNative: boolean,
  leading: number,
): void {
  const target = at === -1 ? undefined : out[at];
  const insertAt = at === -1 ? leading : at + 1;
  let next = insertAt;
  while (next < out.length && shapes.isInstruction(out[next] as Item)) next++;
  const nextTurn = out[next];
  const canBeNative =
    isNative &&
    target !== undefined &&
    (shapes.isUserTurn(target) || shapes.isToolResult(target)) &&
    !(nextTurn !== undefined && shapes.isUserTurn(nextTurn));
  if (canBeNative) {
    const adjacent = out[insertAt];
    if (adjacent !== undefined && shapes.isInstruction(adjacent)) out[insertAt] = shapes.mergeNative(adjacent, texts);
    else out.splice(insertAt, 0, shapes.nativeUpdate(texts));
    return;
  }
  const wrapped = texts.map(wrapSystemUpdate);
  if (target !== undefined && shapes.isUserTurn(target)) out[at] = shapes.appendToUser(target, wrapped);
  else out.splice(insertAt, 0, shapes.userTurn(wrapped));
}
