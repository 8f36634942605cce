// Owns reading a Chat Completions reply into a ProviderReply: a `chat.completion` JSON
// document, or the stream of `chat.completion.chunk` events ending in `[DONE]`, with tool
// call fragments assembled by index. Compatible servers differ in small ways that are
// accepted here: arguments already parsed into an object, a missing tool call id.

import Type from "typebox";
import { Compile } from "typebox/compile";
import type { ProviderReply, ToolCall } from "../session/provider.ts";
import { ProviderReplyInvalid } from "./errors.ts";
import type { ServerSentEvent } from "./sse.ts";
import type { Endpoint } from "./transport.ts";
import { StreamInterrupted } from "./transport.ts";

const ReplyToolCall = Type.Object({
  id: Type.Optional(Type.String()),
  function: Type.Object({ name: Type.String(), arguments: Type.Optional(Type.Unknown()) }),
});

/** The parts of a non-streaming reply that a ProviderReply needs. */
export const OpenAICompletionReply = Type.Object({
  choices: Type.Array(
    Type.Object({
      message: Type.Object({
        content: Type.Optional(Type.Union([Type.String(), Type.Null()])),
        tool_calls: Type.Optional(Type.Union([Type.Array(ReplyToolCall), Type.Null()])),
      }),
    }),
    { minItems: 1 },
  ),
});

const ChunkToolCall = Type.Object({
  index: Type.Integer(),
  id: Type.Optional(Type.String()),
  function: Type.Optional(Type.Object({ name: Type.Optional(Type.String()), arguments: Type.Optional(Type.String()) })),
});

/** The parts of a streamed chunk that a ProviderReply needs. */
export const OpenAICompletionChunk = Type.Object({
  choices: Type.Array(
    Type.Object({
      delta: Type.Optional(
        Type.Object({
          content: Type.Optional(Type.Union([Type.String(), Type.Null()])),
          tool_calls: Type.Optional(Type.Union([Type.Array(ChunkToolCall), Type.Null()])),
        }),
      ),
      finish_reason: Type.Optional(Type.Union([Type.String(), Type.Null()])),
    }),
  ),
});

const ChunkError = Type.Object({ error: Type.Unknown() });

const isCompletion = Compile(OpenAICompletionReply);
const isChunk = Compile(OpenAICompletionChunk);
const isChunkError = Compile(ChunkError);

/** Reads a non-streaming reply (`{ choices: [{ message }] }`). Throws `ProviderReplyInvalid` naming what is wrong. */
export function openAIReplyFromCompletion(json: unknown, endpoint: Endpoint): ProviderReply {
  if (!isCompletion.Check(json)) {
    throw new ProviderReplyInvalid(endpoint.provider, endpoint.url, "expected a chat completion with at least one choice");
  }
  const message = json.choices[0]!.message;
  const toolCalls = (message.tool_calls ?? []).map((call, index) =>
    toolCallOf(call.id, call.function.name, call.function.arguments ?? "", index, endpoint),
  );
  return replyOf(message.content ?? "", toolCalls);
}

interface OpenToolCall {
  id?: string;
  name: string;
  arguments: string;
}

/**
 * Assembles a streamed reply from the first choice of each chunk. Tool call fragments
 * join by `index`; arguments parse when the stream ends. A chunk carrying `error`, or a
 * stream that ends before `[DONE]` or a `finish_reason`, throws `StreamInterrupted` so
 * the call is retried.
 */
export async function openAIReplyFromStream(events: AsyncIterable<ServerSentEvent>, endpoint: Endpoint): Promise<ProviderReply> {
  let text = "";
  const calls = new Map<number, OpenToolCall>();
  let isComplete = false;
  for await (const { data } of events) {
    if (data.trim() === "[DONE]") {
      isComplete = true;
      break;
    }
    let chunk: unknown;
    try {
      chunk = JSON.parse(data);
    } catch (error) {
      throw new ProviderReplyInvalid(endpoint.provider, endpoint.url, "a stream chunk is not JSON", { cause: error });
    }
    if (isChunkError.Check(chunk)) throw new StreamInterrupted(`error in stream: ${JSON.stringify(chunk.error)}`);
    if (!isChunk.Check(chunk))
      throw new ProviderReplyInvalid(endpoint.provider, endpoint.url, "a stream chunk has no choices array");
    const choice = chunk.choices[0];
    if (choice === undefined) continue; // a usage-only chunk
    text += choice.delta?.content ?? "";
    for (const fragment of choice.delta?.tool_calls ?? []) {
      const call = calls.get(fragment.index) ?? { name: "", arguments: "" };
      if (fragment.id !== undefined && fragment.id !== "") call.id = fragment.id;
      call.name += fragment.function?.name ?? "";
      call.arguments += fragment.function?.arguments ?? "";
      calls.set(fragment.index, call);
    }
    if (typeof choice.finish_reason === "string") isComplete = true;
  }
  if (!isComplete) throw new StreamInterrupted("stream ended before [DONE] or a finish_reason");
  const toolCalls = [...calls]
    .sort(([a], [b]) => a - b)
    .map(([index, call]) => toolCallOf(call.id, call.name, call.arguments, index, endpoint));
  return replyOf(text, toolCalls);
}

/** Arguments arrive as a JSON string (some servers send an object); an id-less call gets `call_<index>`. */
function toolCallOf(id: string | undefined, name: string, input: unknown, index: number, endpoint: Endpoint): ToolCall {
  const callId = id ?? `call_${index}`;
  if (typeof input !== "string") return { id: callId, name, input };
  if (input.trim() === "") return { id: callId, name, input: {} };
  try {
    return { id: callId, name, input: JSON.parse(input) };
  } catch (error) {
    throw new ProviderReplyInvalid(
      endpoint.provider,
      endpoint.url,
      `tool call ${callId} (${name}) has arguments that are not JSON`,
      {
        cause: error,
      },
    );
  }
}

function replyOf(text: string, toolCalls: ToolCall[]): ProviderReply {
  return toolCalls.length === 0 ? { text } : { text, toolCalls };
}
