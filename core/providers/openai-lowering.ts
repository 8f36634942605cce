/**
 * Lowering to the OpenAI Chat Completions API and the servers that copy it: a pure
 * function from a ProviderRequest to the request body, with the capability table that
 * decides how Mid-Conversation System Messages travel.
 *
 * - The host system prompt and the Baseline System Context join (blank-line separated)
 *   into one leading instruction message: many local chat templates accept exactly one
 *   system message, and only first. The provider caches prefixes on its own.
 * - A Mid-Conversation System Message becomes a mid-conversation `developer` or `system`
 *   message when the model is declared to accept one. By default — the safe choice for
 *   compatible servers — it becomes `<system-update>` text in a user message.
 * - A compaction summary becomes `<summary>` text in a user message.
 * - Consecutive user-side text (user input, wrapped updates, summaries) merges into one
 *   user message, blank-line separated, because strict chat templates require user and
 *   assistant turns to alternate.
 * - Assistant tool calls become `tool_calls` with JSON-string arguments; each result is a
 *   `role: "tool"` message with its `tool_call_id`. Nothing may stand between a tool
 *   call and its results, so user-side text that arrives while results are outstanding
 *   waits until the last of them (the session runtime settles tools first anyway).
 *
 * - Explicit prompt-cache breakpoints (gpt-5.6 and later, decision 100): the body asks for
 *   `prompt_cache_options: { mode: "explicit" }` and marks with `prompt_cache_breakpoint`
 *   the leading instruction message (the end of the Baseline) and every user-side message
 *   that a request ended with: the newest one, and each one an assistant message follows.
 *   A breakpoint stays where it was placed, so each request reads the previous request's
 *   entry (the API matches among the latest 80 breakpoints) and writes its own tail.
 *
 * Append-only: a request that appends messages lowers to the previous body's messages
 * followed by new ones; breakpoints never move. See `prefix-extension.ts`.
 *
 * @module
 */

import type { ProviderRequest, RequestMessage, ToolCall } from "../session/provider.ts";
import type { ToolDefinition } from "../session/tool-definition.ts";
import { type CapabilityTable, capabilitiesFor } from "./capabilities.ts";
import { openAIToolId } from "./openai-wire.ts";
import { wrapSummary, wrapSystemUpdate } from "./wrapped-text.ts";

/** What lowering needs to know about one Chat Completions model. */
export interface OpenAIModelCapabilities {
  /** Role of the leading instruction message (host system prompt and Baseline). */
  readonly instructionRole: "system" | "developer";
  /** Role of a Mid-Conversation System Message, or `"wrapped"` for `<system-update>` text in a user message. */
  readonly systemUpdateRole: "system" | "developer" | "wrapped";
  /** Sent as `max_completion_tokens` when set; otherwise the server's default applies. */
  readonly maxTokens?: number;
  /** The server accepts `prompt_cache_key`: the session id is sent as one, so a session's requests share a cache. */
  readonly promptCacheKey?: boolean;
  /** The server accepts `stream_options: { include_usage: true }`, reporting token usage at the end of a stream. */
  readonly streamUsage?: boolean;
  /**
   * The model takes explicit prompt-cache breakpoints (`prompt_cache_options` and
   * `prompt_cache_breakpoint` on text parts; gpt-5.6 and later): lowering places them.
   */
  readonly explicitCacheBreakpoints?: boolean;
}

/** Capabilities of a model that no table row matches: one leading system message, wrapped updates. */
export const openAIDefaults: OpenAIModelCapabilities = { instructionRole: "system", systemUpdateRole: "wrapped" };

/**
 * Rows for OpenAI's hosted models, which accept instruction messages anywhere in the
 * conversation. Not the default of `openAICompatibleProvider`: local servers may serve
 * models under similar names with templates that accept a system message only first.
 */
export const openAIModels: CapabilityTable<OpenAIModelCapabilities> = [
  {
    model: /^(?:gpt-4o|gpt-4\.1)(?:$|-)/,
    capabilities: { instructionRole: "system", systemUpdateRole: "system", promptCacheKey: true, streamUsage: true },
  },
  {
    model: /^(?:gpt-5|o[134])(?:$|[-.])/,
    capabilities: { instructionRole: "developer", systemUpdateRole: "developer", promptCacheKey: true, streamUsage: true },
  },
  // gpt-5.6, gpt-5.6-terra, gpt-5.10, gpt-6-sol …; not gpt-5, gpt-5.5, gpt-5-mini.
  {
    model: /^gpt-(?:5\.(?:[6-9]|[1-9]\d)|[6-9]|[1-9]\d)(?:$|[-.])/,
    capabilities: {
      instructionRole: "developer",
      systemUpdateRole: "developer",
      promptCacheKey: true,
      streamUsage: true,
      explicitCacheBreakpoints: true,
    },
    source: "openai/openai-openapi (2026-08): prompt_cache_options, prompt_cache_breakpoint",
    date: "2026-12-04",
  },
];

/** The capabilities of a Chat Completions model according to `table` (default: none declared, all wrapped). */
export function openAICapabilities(model: string, table: CapabilityTable<OpenAIModelCapabilities> = []): OpenAIModelCapabilities {
  return capabilitiesFor(table, model, openAIDefaults);
}

/** A text content part; the only part lowering sends, and only where it marks a cache breakpoint. */
export interface OpenAITextPart {
  type: "text";
  text: string;
  prompt_cache_breakpoint?: { mode: "explicit" };
}

/** An instruction message: the leading one, or a native Mid-Conversation System Message. */
export interface OpenAIInstructionMessage {
  role: "system" | "developer";
  content: string | OpenAITextPart[];
}

/** A user message. */
export interface OpenAIUserMessage {
  role: "user";
  content: string | OpenAITextPart[];
}

/** A tool call the model made, replayed in an assistant message. */
export interface OpenAIToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

/** An assistant message; `content` is null when the reply is only tool calls. */
export interface OpenAIAssistantMessage {
  role: "assistant";
  content: string | null;
  tool_calls?: OpenAIToolCall[];
}

/** A tool's result. */
export interface OpenAIToolMessage {
  role: "tool";
  tool_call_id: string;
  content: string | OpenAITextPart[];
}

/** One lowered message. */
export type OpenAIMessage = OpenAIInstructionMessage | OpenAIUserMessage | OpenAIAssistantMessage | OpenAIToolMessage;

/** A function tool declaration. */
export interface OpenAITool {
  type: "function";
  function: { name: string; description?: string; parameters: { [keyword: string]: unknown } };
}

/**
 * A Chat Completions request body, without `stream` (the adapter adds it). Key order is
 * fixed — model, tools, max_completion_tokens, prompt_cache_key, prompt_cache_options,
 * messages — so serialization is stable. `prompt_cache_retention` is never sent (the spec
 * deprecates it beside `prompt_cache_options`).
 */
export interface OpenAIChatBody {
  model: string;
  tools?: OpenAITool[];
  max_completion_tokens?: number;
  /** The session id, for servers that route a key's requests to the same prompt cache. */
  prompt_cache_key?: string;
  /** Explicit caching: entries are written only at the breakpoints lowering placed. */
  prompt_cache_options?: { mode: "explicit" };
  messages: OpenAIMessage[];
}

/** Options of `lowerOpenAI`. */
export interface OpenAILoweringOptions {
  /** Tools declared with every request; ProviderRequest carries none. */
  readonly tools?: readonly ToolDefinition[];
}

/**
 * Lowers a ProviderRequest to a Chat Completions body for a model with `capabilities`.
 * Pure and deterministic: equal requests lower to equal bodies, and a request that
 * appends messages lowers to the same messages followed by new ones.
 */
export function lowerOpenAI(
  request: ProviderRequest,
  capabilities: OpenAIModelCapabilities,
  options: OpenAILoweringOptions = {},
): OpenAIChatBody {
  const tools = options.tools ?? [];
  return {
    model: request.model,
    ...(tools.length > 0 ? { tools: tools.map(lowerTool) } : {}),
    ...(capabilities.maxTokens === undefined ? {} : { max_completion_tokens: capabilities.maxTokens }),
    ...(capabilities.promptCacheKey === true && request.sessionId !== undefined ? { prompt_cache_key: request.sessionId } : {}),
    ...(capabilities.explicitCacheBreakpoints === true ? { prompt_cache_options: { mode: "explicit" as const } } : {}),
    messages:
      capabilities.explicitCacheBreakpoints === true
        ? placeBreakpoints(lowerMessages(request, capabilities))
        : lowerMessages(request, capabilities),
  };
}

/**
 * Marks the leading instruction message and every user-side message (user, tool, or
 * instruction) that is the last or is followed by an assistant message: where a request
 * ended. Whether a message is marked depends only on what follows it once its reply came,
 * so a longer history marks the same messages and the bytes of the prefix hold.
 */
function placeBreakpoints(messages: OpenAIMessage[]): OpenAIMessage[] {
  return messages.map((message, index) => {
    if (message.role === "assistant") return message;
    const isLeading = index === 0 && message.role !== "user" && message.role !== "tool";
    const next = messages[index + 1];
    if (!isLeading && next !== undefined && next.role !== "assistant") return message;
    if (typeof message.content !== "string" || message.content === "") return message;
    return { ...message, content: [{ type: "text", text: message.content, prompt_cache_breakpoint: { mode: "explicit" } }] };
  });
}

function lowerTool(tool: ToolDefinition): OpenAITool {
  return {
    type: "function",
    function: {
      name: tool.name,
      ...(tool.description === undefined ? {} : { description: tool.description }),
      parameters: { ...tool.inputSchema },
    },
  };
}

function lowerMessages(request: ProviderRequest, capabilities: OpenAIModelCapabilities): OpenAIMessage[] {
  const lowered: OpenAIMessage[] = [];
  const instructions = request.system.filter((part) => part !== "").join("\n\n");
  if (instructions !== "") lowered.push({ role: capabilities.instructionRole, content: instructions });

  let outstandingCalls = new Set<string>();
  let waiting: RequestMessage[] = [];
  const lowerUserSide = (message: RequestMessage): void => {
    switch (message.role) {
      case "user":
        appendUserText(lowered, message.text);
        return;
      case "summary":
        appendUserText(lowered, wrapSummary(message.text));
        return;
      case "system-update":
        if (capabilities.systemUpdateRole === "wrapped") appendUserText(lowered, wrapSystemUpdate(message.text));
        else lowered.push({ role: capabilities.systemUpdateRole, content: message.text });
        return;
    }
  };
  const releaseWaiting = (): void => {
    for (const message of waiting) lowerUserSide(message);
    waiting = [];
  };

  for (const message of request.messages) {
    switch (message.role) {
      case "assistant":
        releaseWaiting();
        lowered.push(lowerAssistant(message.text, message.toolCalls ?? []));
        outstandingCalls = new Set((message.toolCalls ?? []).map((call) => call.id));
        break;
      case "tool":
        lowered.push({ role: "tool", tool_call_id: openAIToolId(message.callId), content: message.result });
        outstandingCalls.delete(message.callId);
        if (outstandingCalls.size === 0) releaseWaiting();
        break;
      default:
        if (outstandingCalls.size > 0) waiting.push(message);
        else lowerUserSide(message);
    }
  }
  releaseWaiting();
  return lowered;
}

function lowerAssistant(reply: string, toolCalls: readonly ToolCall[]): OpenAIAssistantMessage {
  if (toolCalls.length === 0) return { role: "assistant", content: reply };
  return {
    role: "assistant",
    content: reply === "" ? null : reply,
    tool_calls: toolCalls.map((call) => ({
      id: openAIToolId(call.id),
      type: "function",
      function: { name: call.name, arguments: JSON.stringify(call.input ?? {}) },
    })),
  };
}

/** Appends text to the user message at the end, opening one if the last message is not a user message. */
function appendUserText(lowered: OpenAIMessage[], text: string): void {
  const last = lowered.at(-1);
  if (last?.role === "user" && typeof last.content === "string") last.content = `${last.content}\n\n${text}`;
  else lowered.push({ role: "user", content: text });
}
