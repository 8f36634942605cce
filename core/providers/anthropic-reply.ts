// Owns reading an Anthropic Messages API reply into a ProviderReply: a `message` JSON
// document, or the event stream (`content_block_start` / `content_block_delta` / …)
// assembled into the same text and tool calls. Block types other than text and
// tool_use (thinking, for instance) are not part of a ProviderReply and are skipped.

import Type from "typebox";
import { Compile } from "typebox/compile";
import type { ProviderReply, ToolCall } from "../session/provider.ts";
import { ProviderReplyInvalid } from "./errors.ts";
import type { ServerSentEvent } from "./sse.ts";
import type { Endpoint } from "./transport.ts";
import { StreamInterrupted } from "./transport.ts";

const TextBlock = Type.Object({ type: Type.Literal("text"), text: Type.String() });
const ToolUseBlock = Type.Object({
  type: Type.Literal("tool_use"),
  id: Type.String(),
  name: Type.String(),
  input: Type.Unknown(),
});
const AnyBlock = Type.Object({ type: Type.String() });

/** The parts of a non-streaming reply that a ProviderReply needs. */
export const AnthropicMessageReply = Type.Object({ content: Type.Array(AnyBlock) });

const BlockStart = Type.Object({ index: Type.Integer(), content_block: AnyBlock });
const BlockDelta = Type.Object({
  index: Type.Integer(),
  delta: Type.Object({ type: Type.String(), text: Type.Optional(Type.String()), partial_json: Type.Optional(Type.String()) }),
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
    throw new ProviderReplyInvalid(endpoint.provider, endpoint.url, "expected a message with a content array");
  let text = "";
  const toolCalls: ToolCall[] = [];
  for (const block of json.content) {
    if (isText.Check(block)) text += block.text;
    else if (isToolUse.Check(block)) toolCalls.push({ id: block.id, name: block.name, input: block.input });
  }
  return replyOf(text, toolCalls);
}

type OpenBlock = { kind: "text"; text: string } | { kind: "tool"; id: string; name: string; input: unknown; json: string };

/**
 * Assembles a streamed reply. Text deltas concatenate per block; `input_json_delta`
 * fragments concatenate and parse when the stream ends. An `error` event, or a stream
 * that ends before `message_stop`, throws `StreamInterrupted` so the call is retried.
 */
export async function anthropicReplyFromStream(
  events: AsyncIterable<ServerSentEvent>,
  endpoint: Endpoint,
): Promise<ProviderReply> {
  const blocks = new Map<number, OpenBlock>();
  let isComplete = false;
  for await (const { event, data } of events) {
    if (event === "ping") continue;
    const payload = parseEventData(data, event, endpoint);
    switch (event) {
      case "content_block_start": {
        if (!isBlockStart.Check(payload)) throw invalid(endpoint, "content_block_start without index and content_block");
        const block = payload.content_block;
        if (isText.Check(block)) blocks.set(payload.index, { kind: "text", text: block.text });
        else if (isToolUse.Check(block)) {
          blocks.set(payload.index, { kind: "tool", id: block.id, name: block.name, input: block.input, json: "" });
        }
        break;
      }
      case "content_block_delta": {
        if (!isBlockDelta.Check(payload)) throw invalid(endpoint, "content_block_delta without index and delta");
        const block = blocks.get(payload.index);
        if (block?.kind === "text" && payload.delta.type === "text_delta") block.text += payload.delta.text ?? "";
        if (block?.kind === "tool" && payload.delta.type === "input_json_delta") block.json += payload.delta.partial_json ?? "";
        break;
      }
      case "error": {
        const message = isStreamError.Check(payload) ? `${payload.error.type}: ${payload.error.message}` : data;
        throw new StreamInterrupted(`error event in stream: ${message}`);
      }
      case "message_stop":
        isComplete = true;
        break;
    }
  }
  if (!isComplete) throw new StreamInterrupted("stream ended before message_stop");

  let text = "";
  const toolCalls: ToolCall[] = [];
  for (const [, block] of [...blocks].sort(([a], [b]) => a - b)) {
    if (block.kind === "text") text += block.text;
    else toolCalls.push({ id: block.id, name: block.name, input: toolInput(block, endpoint) });
  }
  return replyOf(text, toolCalls);
}

function toolInput(block: Extract<OpenBlock, { kind: "tool" }>, endpoint: Endpoint): unknown {
  if (block.json === "") return block.input;
  try {
    return JSON.parse(block.json);
  } catch (error) {
    throw new ProviderReplyInvalid(
      endpoint.provider,
      endpoint.url,
      `tool call ${block.id} (${block.name}) has input that is not JSON`,
      {
        cause: error,
      },
    );
  }
}

function parseEventData(data: string, event: string, endpoint: Endpoint): unknown {
  try {
    return JSON.parse(data);
  } catch (error) {
    throw new ProviderReplyInvalid(endpoint.provider, endpoint.url, `event "${event}" carries data that is not JSON`, {
      cause: error,
    });
  }
}

function invalid(endpoint: Endpoint, reason: string): ProviderReplyInvalid {
  return new ProviderReplyInvalid(endpoint.provider, endpoint.url, reason);
}

function replyOf(text: string, toolCalls: ToolCall[]): ProviderReply {
  return toolCalls.length === 0 ? { text } : { text, toolCalls };
}
