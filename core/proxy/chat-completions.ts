// Owns the Chat Completions wire (`POST /v1/chat/completions`) for the proxy: the Baseline
// as an instruction message after the client's leading ones, updates as instruction
// messages (or `<system-update>` text) after the newest user or tool message.

import Type from "typebox";
import { Compile } from "typebox/compile";
import { openAIErrorBody } from "./openai-responses.ts";
import { chatCompletionsUsage } from "./openai-usage.ts";
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

const ChatBody = Type.Object({
  model: Type.String({ minLength: 1 }),
  messages: Type.Array(Type.Object({ role: Type.String() }), { minItems: 1 }),
  stream: Type.Optional(Type.Union([Type.Boolean(), Type.Null()])),
  tools: Type.Optional(Type.Array(Type.Object({}))),
  prompt_cache_key: Type.Optional(Type.Union([Type.String(), Type.Null()])),
});
const validator = Compile(ChatBody);

const textPart = (text: string) => ({ type: "text", text });

function shapesFor(role: "system" | "developer"): ItemShapes {
  return {
    isInstruction: isOpenAIInstruction,
    isUserTurn: (item) => item.role === "user",
    isToolResult: (item) => item.role === "tool" || item.role === "function",
    nativeUpdate: (texts) => ({ role, content: texts.join("\n\n") }),
    mergeNative: (item, texts) =>
      Array.isArray(item.content)
        ? { ...item, content: [...texts.map(textPart), ...item.content] }
        : { ...item, content: [...texts, String(item.content ?? "")].join("\n\n") },
    appendToUser: (item, texts) =>
      Array.isArray(item.content)
        ? { ...item, content: [...item.content, ...texts.map(textPart)] }
        : { ...item, content: [String(item.content ?? ""), ...texts].join("\n\n") },
    userTurn: (texts) => ({ role: "user", content: texts.join("\n\n") }),
    baseline: (text) => ({ role, content: text }),
  };
}
const shapesByRole = { system: shapesFor("system"), developer: shapesFor("developer") };

function read(body: unknown): ConversationRequest {
  if (!validator.Check(body)) throw bodyInvalidOf(validator.Errors(body));
  const items = body.messages as Item[];
  const { history, leading, statedText } = readList(items, isOpenAIInstruction, { systemText: "", openingTurns: 2 });
  return {
    model: body.model,
    stream: body.stream === true,
    items,
    history,
    leading,
    statedText,
    toolNames: toolNamesOf(body.tools),
    clientSessionId: nonEmpty(body.prompt_cache_key),
  };
}

/** The Chat Completions wire. */
export const chatCompletions: WireFormat = {
  name: "chat-completions",
  api: "openai",
  read,
  place: (body, request, context, placement) => ({
    ...body,
    messages: placeContext(request, context, shapesByRole[placement.role], placement.isNative),
  }),
  usageReader: () => latestUsage(chatCompletionsUsage, chatCompletionsUsage),
  errorBody: (status, message) => openAIErrorBody(status, message),
};
