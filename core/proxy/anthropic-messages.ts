// Owns the Anthropic Messages wire (`POST /v1/messages`) for the proxy: the Baseline as a
// text block after the client's top-level `system` blocks, updates as `role: "system"`
// messages (or `<system-update>` text), and the cache breakpoints a forwarded body may
// carry: none on a `role: "system"` message (the client's moves to the newest user turn,
// where the API reads it), at most four in all.

import Type from "typebox";
import { Compile } from "typebox/compile";
import { type AnthropicUsage, anthropicTokenUsage, mergeUsage } from "../providers/anthropic-reply-parts.ts";
import { type Item, type ItemShapes, placeContext } from "./placement.ts";
import {
  bodyInvalidOf,
  type ConversationRequest,
  type ModelPlacement,
  readList,
  textOf,
  toolNamesOf,
  type UsageReader,
  type WireFormat,
} from "./wire.ts";

const Content = Type.Union([Type.String(), Type.Array(Type.Object({ type: Type.String() }))]);
const MessagesBody = Type.Object({
  model: Type.String({ minLength: 1 }),
  messages: Type.Array(
    Type.Object({
      role: Type.Union([Type.Literal("user"), Type.Literal("assistant"), Type.Literal("system")]),
      content: Content,
    }),
    { minItems: 1 },
  ),
  system: Type.Optional(Content),
  stream: Type.Optional(Type.Boolean()),
  tools: Type.Optional(Type.Array(Type.Object({}))),
  metadata: Type.Optional(Type.Object({ user_id: Type.Optional(Type.Union([Type.String(), Type.Null()])) })),
});
const validator = Compile(MessagesBody);

type Block = Record<string, unknown>;

/** The API's most cache breakpoints in one request. */
export const maxCacheBreakpoints = 4;

const blocksOf = (content: unknown): Block[] =>
  typeof content === "string" ? [{ type: "text", text: content }] : [...(content as Block[])];

const textBlocks = (texts: readonly string[]): Block[] => texts.map((text) => ({ type: "text", text }));

const shapes: ItemShapes = {
  isInstruction: (item) => item.role === "system",
  isUserTurn: (item) => item.role === "user",
  isToolResult: () => false,
  nativeUpdate: (texts) => ({ role: "system", content: textBlocks(texts) }),
  mergeNative: (item, texts) => ({ ...item, content: [...textBlocks(texts), ...blocksOf(item.content)] }),
  appendToUser: (item, texts) => ({ ...item, content: [...blocksOf(item.content), ...textBlocks(texts)] }),
  userTurn: (texts) => ({ role: "user", content: textBlocks(texts) }),
};

/** The session id Claude Code puts in `metadata.user_id` (`…_session_<uuid>`, or JSON with `session_id`). */
export function sessionIdOfUserId(userId: unknown): string | undefined {
  if (typeof userId !== "string" || userId === "") return undefined;
  if (userId.startsWith("{")) {
    try {
      const parsed = JSON.parse(userId) as { session_id?: unknown };
      if (typeof parsed.session_id === "string" && parsed.session_id !== "") return parsed.session_id;
    } catch {
      // Not JSON after all: read it as the older form below.
    }
  }
  const match = /_session_([0-9a-zA-Z-]+)$/.exec(userId);
  return match?.[1];
}

function read(body: unknown): ConversationRequest {
  if (!validator.Check(body)) throw bodyInvalidOf(validator.Errors(body));
  const items = body.messages as Item[];
  // The Baseline goes in `system`: an update at position 0 goes before every message.
  const { history, statedText } = readList(items, (item) => item.role === "system", {
    systemText: textOf(body.system),
    openingTurns: 2,
  });
  return {
    model: body.model,
    stream: body.stream === true,
    items,
    history,
    leading: 0,
    statedText,
    toolNames: toolNamesOf(body.tools),
    clientSessionId: sessionIdOfUserId(body.metadata?.user_id),
  };
}

/** Where a block list's breakpoints are: `[listIndex, blockIndex]` pairs, in request order. */
interface Breakpoint {
  readonly message: number;
  readonly block: number;
}

/**
 * Moves breakpoints off `role: "system"` messages to the newest user turn's last block,
 * then keeps at most four in the request (the latest of the messages' kept first). Returns
 * the messages, with only the changed ones copied.
 */
export function fixBreakpoints(messages: Item[], fixedBreakpoints: number): Item[] {
  let moved: unknown;
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i] as Item;
    if (message.role !== "system") continue;
    const hasOwn = message.cache_control !== undefined;
    const blocks = Array.isArray(message.content) ? (message.content as Block[]) : [];
    if (!hasOwn && !blocks.some((block) => block.cache_control !== undefined)) continue;
    const { cache_control: own, ...rest } = message;
    moved = own ?? moved;
    const content = blocks.map((block) => {
      if (block.cache_control === undefined) return block;
      const { cache_control, ...plain } = block;
      moved = cache_control;
      return plain;
    });
    messages[i] = Array.isArray(message.content) ? { ...rest, content } : rest;
  }
  if (moved !== undefined) {
    for (let i = messages.length - 1; i >= 0; i--) {
      const message = messages[i] as Item;
      if (message.role !== "user") continue;
      const blocks = blocksOf(message.content);
      const last = blocks.at(-1);
      if (last !== undefined && last.cache_control === undefined) {
        blocks[blocks.length - 1] = { ...last, cache_control: moved };
        messages[i] = { ...message, content: blocks };
      }
      break;
    }
  }
  const marks: Breakpoint[] = [];
  messages.forEach((message, i) => {
    if (Array.isArray(message.content)) {
      (message.content as Block[]).forEach((block, b) => {
        if (block.cache_control !== undefined) marks.push({ message: i, block: b });
      });
    }
  });
  const excess = fixedBreakpoints + marks.length - maxCacheBreakpoints;
  // The earliest go first: a later breakpoint reads and writes a longer prefix.
  for (const mark of marks.slice(0, Math.max(0, Math.min(excess, marks.length)))) {
    const message = messages[mark.message] as Item;
    const blocks = [...(message.content as Block[])];
    const { cache_control: _dropped, ...plain } = blocks[mark.block] as Block;
    blocks[mark.block] = plain;
    messages[mark.message] = { ...message, content: blocks };
  }
  return messages;
}

const countMarks = (list: unknown): number =>
  Array.isArray(list) ? list.filter((entry) => (entry as Block | null)?.cache_control !== undefined).length : 0;

/** The Anthropic Messages wire. */
export const anthropicMessages: WireFormat = {
  name: "messages",
  api: "anthropic",
  read,
  place(body, request, context, placement: ModelPlacement) {
    const system = [...(body.system === undefined ? [] : blocksOf(body.system)), { type: "text", text: context.baseline }];
    const placed = placeContext(request, context, shapes, placement.isNative);
    const messages = fixBreakpoints(placed, countMarks(body.tools) + countMarks(system));
    return { ...body, system, messages };
  },
  usageReader(): UsageReader {
    let usage: AnthropicUsage | undefined;
    const take = (found: unknown) => {
      if (found !== null && typeof found === "object") usage = mergeUsage(usage ?? {}, found as AnthropicUsage);
    };
    return {
      data(data) {
        const event = data as { type?: unknown; message?: { usage?: unknown }; usage?: unknown } | null;
        if (event?.type === "message_start") take(event.message?.usage);
        else if (event?.type === "message_delta") take(event.usage);
      },
      json(json) {
        take((json as { usage?: unknown } | null)?.usage);
      },
      usage: () => (usage === undefined ? undefined : anthropicTokenUsage(usage)),
    };
  },
  errorBody(status, message) {
    const type =
      status === 400
        ? "invalid_request_error"
        : status === 401
          ? "authentication_error"
          : status === 413
            ? "request_too_large"
            : status === 504
              ? "timeout_error"
              : "api_error";
    return { type: "error", error: { type, message } };
  },
};
