// Owns the OpenAI Responses wire (`POST /v1/responses`) for the proxy: `input` items after
// `instructions`; the Baseline as an instruction message after the client's leading ones,
// updates as instruction messages (or `<system-update>` text) after the newest user
// message or tool output. Items the proxy does not know (reasoning with its
// `encrypted_content`, calls, outputs) pass through untouched. A request that continues a
// stored response (`previous_response_id`, `conversation`) holds only its new items: the
// history lives upstream, so context cannot be placed and the request is forwarded as it is.

import Type from "typebox";
import { Compile } from "typebox/compile";
import { openAIResponsesUsage } from "./openai-usage.ts";
import { type Item, type ItemShapes, placeContext } from "./placement.ts";
import {
  bodyInvalidOf,
  type ConversationRequest,
  isOpenAIInstruction,
  latestUsage,
  nonEmpty,
  readList,
  toolNamesOf,
  type WireFormat,
} from "./wire.ts";

const ResponsesBody = Type.Object({
  model: Type.String({ minLength: 1 }),
  input: Type.Union([Type.String(), Type.Array(Type.Object({}), { minItems: 1 })]),
  instructions: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  stream: Type.Optional(Type.Union([Type.Boolean(), Type.Null()])),
  tools: Type.Optional(Type.Array(Type.Object({}))),
  prompt_cache_key: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  previous_response_id: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  conversation: Type.Optional(Type.Unknown()),
});
const validator = Compile(ResponsesBody);

const isMessage = (item: Item) => item.type === "message" || (item.type === undefined && typeof item.role === "string");
const parts = (content: unknown): unknown[] =>
  typeof content === "string" ? [{ type: "input_text", text: content }] : Array.isArray(content) ? [...content] : [];
const textParts = (texts: readonly string[]) => texts.map((text) => ({ type: "input_text", text }));

function shapesFor(role: "system" | "developer"): ItemShapes {
  return {
    isInstruction: isOpenAIInstruction,
    isUserTurn: (item) => isMessage(item) && item.role === "user",
    isToolResult: (item) => typeof item.type === "string" && item.type.endsWith("_output"),
    nativeUpdate: (texts) => ({ type: "message", role, content: textParts(texts) }),
    mergeNative: (item, texts) => ({ ...item, content: [...textParts(texts), ...parts(item.content)] }),
    appendToUser: (item, texts) => ({ ...item, content: [...parts(item.content), ...textParts(texts)] }),
    userTurn: (texts) => ({ type: "message", role: "user", content: textParts(texts) }),
    baseline: (text) => ({ type: "message", role, content: textParts([text]) }),
  };
}
const shapesByRole = { system: shapesFor("system"), developer: shapesFor("developer") };

function read(body: unknown): ConversationRequest {
  if (!validator.Check(body)) throw bodyInvalidOf(validator.Errors(body));
  const items: Item[] =
    typeof body.input === "string"
      ? [{ type: "message", role: "user", content: [{ type: "input_text", text: body.input }] }]
      : (body.input as Item[]);
  const { history, leading, statedText } = readList(items, isOpenAIInstruction, {
    systemText: body.instructions ?? "",
    openingTurns: 3,
    isMessage,
  });
  const continues =
    typeof body.previous_response_id === "string" || (body.conversation !== undefined && body.conversation !== null);
  return {
    model: body.model,
    stream: body.stream === true,
    items,
    history,
    leading,
    statedText,
    toolNames: toolNamesOf(body.tools),
    clientSessionId: nonEmpty(body.prompt_cache_key),
    ...(continues ? { passThrough: "it continues a response stored upstream (previous_response_id or conversation)" } : {}),
  };
}

/** The OpenAI Responses wire. */
export const openAIResponses: WireFormat = {
  name: "responses",
  api: "openai",
  read,
  place: (body, request, context, placement) => ({
    ...body,
    input: placeContext(request, context, shapesByRole[placement.role], placement.isNative),
  }),
  usageReader: () =>
    latestUsage((data) => {
      const event = data as { type?: unknown; response?: unknown } | null;
      return typeof event?.type === "string" && event.type.startsWith("response.")
        ? openAIResponsesUsage(event.response)
        : undefined;
    }, openAIResponsesUsage),
  errorBody: (status, message) => openAIErrorBody(status, message),
};

/** An error in the OpenAI APIs' shape. */
export function openAIErrorBody(status: number, message: string): unknown {
  const type =
    status === 400 || status === 413 ? "invalid_request_error" : status === 401 ? "authentication_error" : "server_error";
  return { error: { message, type, param: null, code: null } };
}
