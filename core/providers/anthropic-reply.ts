// Owns reading an Anthropic Messages API reply into a ProviderReply: a `message` JSON
// document, or the event stream (`content_block_start` / `content_block_delta` / …)
// assembled into the same text and tool calls. Block types other than text and
// tool_use are not part of the reply's text; thinking and redacted-thinking blocks are
// kept, with the reply's blocks in order, as provider content to send back unchanged.
// Token usage comes from `usage` (the stream's `message_start` and `message_delta`).

import Type from "typebox";
import { Compile } from "typebox/compile";
import { ProviderReplyInvalid } from "../session/errors.ts";
import type { ProviderReply } from "../session/provider.ts";
import { type AnthropicUsage, anthropicTokenUsage, mergeUsage, type ReplyBlock, replyOf } from "./anthropic-reply-parts.ts";
import type { ServerSentEvent } from "./sse.ts";
import { type Endpoint, StreamInterrupted, where } from "./transport.ts";

const TextBlock = Type.Object({ type: Type.Literal("text"), text: Type.String() });
const ToolUseBlock = Type.Object({
  type: Type.Literal("tool_use"),
  id: Type.String(),
  name: Type.String(),
  input: Type.Unknown(),
});
const AnyBlock = Type.Object({ type: Type.String() });
const ThinkingBlock = Type.Object({ type: Type.Literal("thinking"), thinking: Type.String(), signature: Type.String() });
const RedactedThinkingBlock = Type.Object({ type: Type.Literal("redacted_thinking"), data: Type.String() });
const isThinking = Compile(ThinkingBlock);
const isRedactedThinking = Compile(RedactedThinkingBlock);
const UsageEvent = Type.Object({ usage: Type.Record(Type.String(), Type.Unknown()) });
const MessageStart = Type.Object({ message: UsageEvent });
const isUsageEvent = Compile(UsageEvent);
const isMessageStart = Compile(MessageStart);

/** The parts of a non-streaming reply that a ProviderReply needs. */
export const AnthropicMessageReply = Type.Object({ content: Type.Array(AnyBlock) });

const BlockStart = Type.Object({ index: Type.Integer(), content_block: AnyBlock });
const BlockDelta = Type.Object({
  index: Type.Integer(),
  delta: Type.Object({
    type: Type.String(),
    text: Type.Optional(Type.String()),
    partial_json: Type.Optional(Type.String()),
    thinking: Type.Optional(Type.String()),
    signature: Type.Optional(Type.String()),
  }),
});
const StreamError = Type.Object({ error: Type.Object({ type: Type.String(), message: Type.String() }) });

const isText = Compile(TextBlock);
const isToolUse = Compile(ToolUseBlock);
const isMessageReply = Compile(AnthropicMessageReply);
const isBlockStart = Compile(BlockStart);
const isBlockDelta = Compile(BlockDelta);
const isStreamError = Compile(StreamError);

/** Reads a non-streaming reply (`{ content: [...] }`). Throws `ProviderReplyInvalid` naming what is wrong. */
export function anthropicReplyFromMessage(json: unknown, endpoint: Endpoint): ProviderReply {
  if (!isMessageReply.Check(json))
    throw new ProviderReplyInvalid({ ...where(endpoint), reason: "expected a message with a content array" });
  const blocks: ReplyBlock[] = [];
  for (const block of json.content) {
    if (isText.Check(block)) blocks.push({ type: "text", text: block.text });
    else if (isToolUse.Check(block)) blocks.push({ type: "tool_use", id: block.id, name: block.name, input: block.input });
    else if (isThinking.Check(block) || isRedactedThinking.Check(block)) blocks.push(block);
  }
  const usage = isUsageEvent.Check(json) ? anthropicTokenUsage(json.usage as AnthropicUsage) : undefined;
  return replyOf(blocks, usage);
}

type OpenBlock =
  | { kind: "text"; text: string }
  | { kind: "tool"; id: string; name: string; input: unknown; json: string }
  | { kind: "thinking"; thinking: string; signature: string }
  | { kind: "redacted"; data: string };

/**
 * Assembles a streamed reply. Text deltas concatenate per block; `input_json_delta`
 * fragments concatenate and parse when the stream ends. An `error` event, or a stream
 * that ends before `message_stop`, throws `StreamInterrupted` so the call is retried.
 */
export async function anthropicReplyFromStream(
  events: AsyncIterable<ServerSentEvent>,
  endpoint: Endpoint,
  onText?: (text: string) => void,
): Promise<ProviderReply> {
  const blocks = new Map<number, OpenBlock>();
  let isComplete = false;
  let usage: AnthropicUsage = {};
  for await (const { event, data } of events) {
    if (event === "ping") continue;
    const payload = parseEventData(data, event, endpoint);
    switch (event) {
      case "content_block_start": {
        if (!isBlockStart.Check(payload)) throw invalid(endpoint, "content_block_start without index and content_block");
        const block = payload.content_block;
        if (isText.Check(block)) {
          blocks.set(payload.index, { kind: "text", text: block.text });
          if (block.text !== "") onText?.(block.text);
        } else if (isToolUse.Check(block)) {
          blocks.set(payload.index, { kind: "tool", id: block.id, name: block.name, input: block.input, json: "" });
        } else if (isThinking.Check(block)) {
          blocks.set(payload.index, { kind: "thinking", thinking: block.thinking, signature: block.signature });
        } else if (isRedactedThinking.Check(block)) blocks.set(payload.index, { kind: "redacted", data: block.data });
        break;
      }
      case "content_block_delta": {
        if (!isBlockDelta.Check(payload)) throw invalid(endpoint, "content_block_delta without index and delta");
        const block = blocks.get(payload.index);
        if (block?.kind === "text" && payload.delta.type === "text_delta" && payload.delta.text) {
          block.text += payload.delta.text;
          onText?.(payload.delta.text);
        }
        if (block?.kind === "tool" && payload.delta.type === "input_json_delta") block.json += payload.delta.partial_json ?? "";
        if (block?.kind === "thinking" && payload.delta.type === "thinking_delta") block.thinking += payload.delta.thinking ?? "";
        if (block?.kind === "thinking" && payload.delta.type === "signature_delta")
          block.signature += payload.delta.signature ?? "";
        break;
      }
      case "message_start":
        if (isMessageStart.Check(payload)) usage = mergeUsage(usage, payload.message.usage as AnthropicUsage);
        break;
      case "message_delta":
        // Counts here are cumulative: they replace the ones of message_start.
        if (isUsageEvent.Check(payload)) usage = mergeUsage(usage, payload.usage as AnthropicUsage);
        break;
      case "error": {
        const message = isStreamError.Check(payload) ? `${payload.error.type}: ${payload.error.message}` : data;
        throw new StreamInterrupted({ ...where(endpoint), reason: `error event in stream: ${message}` });
      }
      case "message_stop":
        isComplete = true;
        break;
    }
  }
  if (!isComplete) throw new StreamInterrupted({ ...where(endpoint), reason: "stream ended before message_stop" });

  const content: ReplyBlock[] = [];
  for (const [, block] of [...blocks].sort(([a], [b]) => a - b)) {
    if (block.kind === "text") content.push({ type: "text", text: block.text });
    else if (block.kind === "tool")
      content.push({ type: "tool_use", id: block.id, name: block.name, input: toolInput(block, endpoint) });
    else if (block.kind === "thinking") content.push({ type: "thinking", thinking: block.thinking, signature: block.signature });
    else content.push({ type: "redacted_thinking", data: block.data });
  }
  return replyOf(content, Object.keys(usage).length === 0 ? undefined : anthropicTokenUsage(usage));
}

function toolInput(block: Extract<OpenBlock, { kind: "tool" }>, endpoint: Endpoint): unknown {
  if (block.json === "") return block.input;
  try {
    return JSON.parse(block.json);
  } catch (error) {
    throw new ProviderReplyInvalid({
      ...where(endpoint),
      reason: `tool call ${block.id} (${block.name}) has input that is not JSON`,
      cause: error,
    });
  }
}

function parseEventData(data: string, event: string, endpoint: Endpoint): unknown {
  try {
    return JSON.parse(data);
  } catch (error) {
    throw new ProviderReplyInvalid({
      ...where(endpoint),
      reason: `event "${event}" carries data that is not JSON`,
      cause: error,
    });
  }
}

function invalid(endpoint: Endpoint, reason: string): ProviderReplyInvalid {
  return new ProviderReplyInvalid({ ...where(endpoint), reason: reason });
}
