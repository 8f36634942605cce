// Owns reading a Chat Completions reply into a ProviderReply: a `chat.completion` JSON
// document, or the stream of `chat.completion.chunk` events ending in `[DONE]`, with tool
// call fragments assembled by index. Compatible servers differ in small ways that are
// accepted here: arguments already parsed into an object, a missing tool call id.
// A `refusal` (message or delta) is surfaced as the reply's `refusal` and its text;
// `usage` (the last chunk's, with `stream_options.include_usage`) becomes TokenUsage.

import Type from "typebox";
import { Compile } from "typebox/compile";
import { ProviderReplyInvalid } from "../session/errors.ts";
import type { ProviderReply, TokenUsage, ToolCall } from "../session/provider.ts";
import type { ServerSentEvent } from "./sse.ts";
import { type Endpoint, StreamInterrupted, where } from "./transport.ts";

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
        refusal: Type.Optional(Type.Union([Type.String(), Type.Null()])),
        tool_calls: Type.Optional(Type.Union([Type.Array(ReplyToolCall), Type.Null()])),
      }),
    }),
    { minItems: 1 },
  ),
});

const Usage = Type.Object({
  prompt_tokens: Type.Number(),
  completion_tokens: Type.Number(),
  prompt_tokens_details: Type.Optional(
    Type.Union([Type.Object({ cached_tokens: Type.Optional(Type.Union([Type.Number(), Type.Null()])) }), Type.Null()]),
  ),
});
const WithUsage = Type.Object({ usage: Usage });
const hasUsage = Compile(WithUsage);

/** The provider-neutral usage of a Chat Completions `usage`: `prompt_tokens` includes the cached ones. */
export function openAITokenUsage(json: unknown): TokenUsage | undefined {
  if (!hasUsage.Check(json)) return undefined;
  const { prompt_tokens, completion_tokens, prompt_tokens_details } = json.usage;
  const cached = Math.min(prompt_tokens_details?.cached_tokens ?? 0, prompt_tokens);
  return { input: prompt_tokens - cached, cacheRead: cached, cacheWrite: 0, output: completion_tokens };
}

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
          refusal: Type.Optional(Type.Union([Type.String(), Type.Null()])),
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
    throw new ProviderReplyInvalid({ ...where(endpoint), reason: "expected a chat completion with at least one choice" });
  }
  const message = json.choices[0]!.message;
  const toolCalls = (message.tool_calls ?? []).map((call, index) =>
    toolCallOf(call.id, call.function.name, call.function.arguments ?? "", index, endpoint),
  );
  return replyOf(message.content ?? "", toolCalls, message.refusal ?? "", openAITokenUsage(json));
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
export async function openAIReplyFromStream(
  events: AsyncIterable<ServerSentEvent>,
  endpoint: Endpoint,
  onText?: (text: string) => void,
): Promise<ProviderReply> {
  let text = "";
  let refusal = "";
  let usage: TokenUsage | undefined;
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
      throw new ProviderReplyInvalid({ ...where(endpoint), reason: "a stream chunk is not JSON", cause: error });
    }
    if (isChunkError.Check(chunk))
      throw new StreamInterrupted({ ...where(endpoint), reason: `error in stream: ${JSON.stringify(chunk.error)}` });
    if (!isChunk.Check(chunk))
      throw new ProviderReplyInvalid({ ...where(endpoint), reason: "a stream chunk has no choices array" });
    usage = openAITokenUsage(chunk) ?? usage;
    const choice = chunk.choices[0];
    if (choice === undefined) continue; // a usage-only chunk
    const piece = choice.delta?.content ?? "";
    if (piece !== "") {
      text += piece;
      onText?.(piece);
    }
    refusal += choice.delta?.refusal ?? "";
    for (const fragment of choice.delta?.tool_calls ?? []) {
      const call = calls.get(fragment.index) ?? { name: "", arguments: "" };
      if (fragment.id !== undefined && fragment.id !== "") call.id = fragment.id;
      call.name += fragment.function?.name ?? "";
      call.arguments += fragment.function?.arguments ?? "";
      calls.set(fragment.index, call);
    }
    if (typeof choice.finish_reason === "string") isComplete = true;
  }
  if (!isComplete) throw new StreamInterrupted({ ...where(endpoint), reason: "stream ended before [DONE] or a finish_reason" });
  const toolCalls = [...calls]
    .sort(([a], [b]) => a - b)
    .map(([index, call]) => toolCallOf(call.id, call.name, call.arguments, index, endpoint));
  return replyOf(text, toolCalls, refusal, usage);
}

/** Arguments arrive as a JSON string (some servers send an object); an id-less call gets `call_<index>`. */
function toolCallOf(id: string | undefined, name: string, input: unknown, index: number, endpoint: Endpoint): ToolCall {
  const callId = id ?? `call_${index}`;
  if (typeof input !== "string") return { id: callId, name, input };
  if (input.trim() === "") return { id: callId, name, input: {} };
  try {
    return { id: callId, name, input: JSON.parse(input) };
  } catch (error) {
    throw new ProviderReplyInvalid({
      ...where(endpoint),
      reason: `tool call ${callId} (${name}) has arguments that are not JSON`,
      cause: error,
    });
  }
}

/** A refusal is never silent: it is the reply's `refusal`, and its text when the model wrote no other. */
function replyOf(text: string, toolCalls: ToolCall[], refusal: string, usage: TokenUsage | undefined): ProviderReply {
  return {
    text: text === "" ? refusal : text,
    ...(toolCalls.length === 0 ? {} : { toolCalls }),
    ...(refusal === "" ? {} : { refusal }),
    ...(usage === undefined ? {} : { usage }),
  };
}
