/**
 * Lowering to the Anthropic Messages API: a pure function from a ProviderRequest to the
 * request body, with the capability table that decides how Mid-Conversation System
 * Messages travel.
 *
 * - `system` holds the host system prompt and the Baseline System Context as separate
 *   text blocks; the last (the Baseline) carries a cache breakpoint.
 * - A Mid-Conversation System Message becomes a native `role: "system"` message when
 *   the model is declared to accept one and the placement is valid: right after a user
 *   turn (user text or tool results) and followed by nothing or by an assistant turn.
 *   Otherwise it becomes a `<system-update>` text block in the adjacent user turn.
 * - A compaction summary becomes a `<summary>` text block in a user turn: the API has no
 *   summary role, and a user-side block keeps it in chronological position.
 * - Consecutive user-side content (user text, tool results, wrapped text) merges into one
 *   user message; within it tool results lead, as the API requires, and everything else
 *   keeps its chronological order.
 * - Two moving cache breakpoints sit in `messages` (decision 100): the tail, on the last
 *   block of the newest user turn (user text, tool results or wrapped text), and the
 *   anchor, on the last block of the user turn before it, which is where the previous
 *   request put its tail. The tail writes this request's entry; the anchor reads the
 *   previous request's entry exactly, however many blocks the last turn added (the API
 *   looks back only about 20 blocks from a breakpoint). Never on a native `role:
 *   "system"` message (an entry there is never read back) nor on a thinking block. With
 *   the Baseline's, at most three breakpoints in all (the API takes four).
 *
 * Append-only: lowering reads each message together with what came before it (and, for
 * a native system message, whether an assistant turn follows), so a request that
 * appends messages to the previous one lowers to the previous body's messages followed
 * by new ones. Only the moving breakpoints differ; see `prefix-extension.ts`.
 *
 * @module
 */

import type { ProviderContent, ProviderRequest, RequestMessage, ToolCall } from "../session/provider.ts";
import type { ToolDefinition } from "../session/tool-definition.ts";
import {
  type AnthropicCacheTtl,
  anthropicToolId,
  anthropicToolInput,
  cacheControlFor,
  isBlankText,
  isReplayOnlyBlock,
  replayableContent,
} from "./anthropic-wire.ts";
import { type CapabilityTable, capabilitiesFor } from "./capabilities.ts";
import { wrapSummary, wrapSystemUpdate } from "./wrapped-text.ts";

/** What lowering needs to know about one Anthropic model. */
export interface AnthropicModelCapabilities {
  /** The model accepts `role: "system"` messages inside `messages` (see `anthropicModels`). */
  readonly nativeSystemMessages: boolean;
  /** `max_tokens` sent with every request to this model. */
  readonly maxTokens: number;
  /**
   * Thinking and redacted-thinking blocks a reply of this model returned are stored with
   * it and sent back unchanged in later requests to the same model, as the API requires
   * in tool-use loops when extended thinking is on (by default or always, on some models).
   */
  readonly replaysThinking?: boolean;
  /** The shortest prefix, in tokens, the API writes to its prompt cache (the cache model's rule). */
  readonly cacheMinimumTokens?: number;
}

/** Capabilities of a model that no table row matches. */
export const anthropicDefaults: AnthropicModelCapabilities = {
  nativeSystemMessages: false,
  maxTokens: 8192,
  cacheMinimumTokens: 1024,
};

const midConversationDocs = "https://platform.claude.com/docs/en/build-with-claude/mid-conversation-system-messages";
const cachingDocs = "https://platform.claude.com/docs/en/build-with-claude/prompt-caching";
const sdkModels = "@anthropic-ai/sdk 1.16.0, type Model";
const checked = "2026-12-04";

/**
 * The default Anthropic capability table. Each row names where its figure comes from and
 * when that was read (decision 100). Native mid-conversation `role: "system"` messages:
 * the models the mid-conversation system messages page lists (Opus 4.8 and later Opus,
 * Sonnet 5.5 and Haiku 5.5 and later, Fable and Mythos 5 and later), matched against the
 * SDK's model list; any other model gets the wrapped fallback. Append rows to declare
 * other models (a later matching row overrides an earlier one).
 */
export const anthropicModels: CapabilityTable<AnthropicModelCapabilities> = [
  // Every Claude model that can think takes its thinking blocks back; the others return none.
  { model: /^claude-/, capabilities: { replaysThinking: true } },
  // claude-opus-4-8, claude-opus-4-8-20260528, claude-opus-4-10, claude-opus-5, claude-opus-5-5 …
  // but not claude-opus-4-7 nor claude-opus-4-20250514 (Opus 4.0 with a date suffix).
  {
    model: /^claude-opus-(?:4-(?:[89]|[1-9]\d)|[5-9]|[1-9]\d)(?!\d)/,
    capabilities: { nativeSystemMessages: true },
    source: midConversationDocs,
    date: checked,
  },
  // claude-sonnet-5-5, claude-haiku-5-5 and later; not claude-sonnet-5 (the page does not list it).
  {
    model: /^claude-(?:sonnet|haiku)-(?:5-(?:[5-9]|[1-9]\d)|[6-9]|[1-9]\d)(?!\d)/,
    capabilities: { nativeSystemMessages: true },
    source: `${midConversationDocs}; ${sdkModels}`,
    date: checked,
  },
  // claude-fable-5, claude-fable-5-1, claude-mythos-5-2 …; not claude-mythos-preview.
  {
    model: /^claude-(?:fable|mythos)-(?:[5-9]|[1-9]\d)(?!\d)/,
    capabilities: { nativeSystemMessages: true },
    source: `${midConversationDocs}; ${sdkModels}`,
    date: checked,
  },
  // The shortest prefix the API caches, per model (shorter ones are processed, not cached).
  {
    model: /^claude-(?:opus-4-[56]|haiku-4-5)(?!\d)/,
    capabilities: { cacheMinimumTokens: 4096 },
    source: cachingDocs,
    date: checked,
  },
  {
    model: /^claude-(?:opus-4-7|sonnet-4-6|haiku-3)(?!\d)/,
    capabilities: { cacheMinimumTokens: 2048 },
    source: cachingDocs,
    date: checked,
  },
  {
    model: /^claude-(?:opus-5|fable-5|mythos-5)(?!\d|-\d)/,
    capabilities: { cacheMinimumTokens: 512 },
    source: cachingDocs,
    date: checked,
  },
];

/** The capabilities of an Anthropic model according to `table` (default `anthropicModels`). */
export function anthropicCapabilities(
  model: string,
  table: CapabilityTable<AnthropicModelCapabilities> = anthropicModels,
): AnthropicModelCapabilities {
  return capabilitiesFor(table, model, anthropicDefaults);
}

/** A prompt-cache breakpoint. */
export interface AnthropicCacheControl {
  type: "ephemeral";
  /** One hour instead of the default five minutes (`cacheTtl`). */
  ttl?: "1h";
}

/** A text content block. */
export interface AnthropicTextBlock {
  type: "text";
  text: string;
  cache_control?: AnthropicCacheControl;
}

/** A tool call the model made, replayed in an assistant turn. */
export interface AnthropicToolUseBlock {
  type: "tool_use";
  id: string;
  name: string;
  input: unknown;
  cache_control?: AnthropicCacheControl;
}

/** A tool's result, in a user turn. */
export interface AnthropicToolResultBlock {
  type: "tool_result";
  tool_use_id: string;
  content: string;
  cache_control?: AnthropicCacheControl;
}

/** A user turn: user text, wrapped host text and tool results. */
export interface AnthropicUserMessage {
  role: "user";
  content: (AnthropicTextBlock | AnthropicToolResultBlock)[];
}

/** A thinking or redacted-thinking block of an earlier reply, sent back exactly as received. */
export type AnthropicReplayBlock =
  | { type: "thinking"; thinking: string; signature: string }
  | { type: "redacted_thinking"; data: string };

/** An assistant turn: its text and tool calls, and the thinking blocks of the reply when replayed. */
export interface AnthropicAssistantMessage {
  role: "assistant";
  content: (AnthropicTextBlock | AnthropicToolUseBlock | AnthropicReplayBlock)[];
}

/** A native mid-conversation system message. */
export interface AnthropicSystemMessage {
  role: "system";
  content: AnthropicTextBlock[];
}

/** One lowered message. Content is always an array of blocks, never the string shorthand. */
export type AnthropicMessage = AnthropicUserMessage | AnthropicAssistantMessage | AnthropicSystemMessage;

/** A tool declaration. */
export interface AnthropicTool {
  name: string;
  description?: string;
  input_schema: { type: "object"; [keyword: string]: unknown };
}

/**
 * A Messages API request body, without `stream` (the adapter adds it). Key order is
 * fixed — model, max_tokens, tools, system, messages — so serialization is stable and
 * follows the API's cache order (tools, system, messages).
 */
export interface AnthropicMessagesBody {
  model: string;
  max_tokens: number;
  tools?: AnthropicTool[];
  system?: AnthropicTextBlock[];
  messages: AnthropicMessage[];
}

/** Options of `lowerAnthropic`. */
export interface AnthropicLoweringOptions {
  /** Tools declared with every request; ProviderRequest carries none. */
  readonly tools?: readonly ToolDefinition[];
  /** Lifetime of the prompt-cache breakpoints; default `"5m"`. See `AnthropicCacheTtl`. */
  readonly cacheTtl?: AnthropicCacheTtl;
}

/**
 * Lowers a ProviderRequest to an Anthropic Messages API body for a model with
 * `capabilities`. Pure and deterministic: equal requests lower to equal bodies, and a
 * request that appends messages lowers to the same messages followed by new ones
 * (apart from the moving cache breakpoint on the last block).
 */
export function lowerAnthropic(
  request: ProviderRequest,
  capabilities: AnthropicModelCapabilities,
  options: AnthropicLoweringOptions = {},
): AnthropicMessagesBody {
  const tools = options.tools ?? [];
  const ttl = options.cacheTtl ?? "5m";
  const system = lowerSystem(request.system, ttl);
  const messages = lowerMessages(request.messages, capabilities.nativeSystemMessages, (message) =>
    replayableContent(message, request.model, capabilities.replaysThinking === true),
  );
  placeMovingBreakpoints(messages, ttl);
  return {
    model: request.model,
    max_tokens: capabilities.maxTokens,
    ...(tools.length > 0 ? { tools: tools.map(lowerTool) } : {}),
    ...(system.length > 0 ? { system } : {}),
    messages,
  };
}

function lowerTool(tool: ToolDefinition): AnthropicTool {
  return {
    name: tool.name,
    ...(tool.description === undefined ? {} : { description: tool.description }),
    input_schema: { ...tool.inputSchema },
  };
}

/** One text block per part with non-whitespace text (the API rejects others); the Baseline, last, holds the breakpoint. */
function lowerSystem(parts: readonly string[], ttl: AnthropicCacheTtl): AnthropicTextBlock[] {
  const blocks: AnthropicTextBlock[] = parts.filter((part) => !isBlankText(part)).map((text) => ({ type: "text", text }));
  const last = blocks.at(-1);
  if (last !== undefined) last.cache_control = cacheControlFor(ttl, "system");
  return blocks;
}

type Replayable = (message: Extract<RequestMessage, { role: "assistant" }>) => ProviderContent | undefined;

function lowerMessages(
  messages: readonly RequestMessage[],
  nativeSystemMessages: boolean,
  replayable: Replayable,
): AnthropicMessage[] {
  const lowered: AnthropicMessage[] = [];
  messages.forEach((message, index) => {
    switch (message.role) {
      case "user":
        if (!isBlankText(message.text)) appendToUserTurn(lowered, text(message.text));
        return;
      case "summary":
        appendToUserTurn(lowered, text(wrapSummary(message.text)));
        return;
      case "tool":
        appendToUserTurn(lowered, {
          type: "tool_result",
          tool_use_id: anthropicToolId(message.callId),
          content: message.result,
        });
        return;
      case "assistant": {
        const replay = replayable(message);
        lowered.push({
          role: "assistant",
          content:
            replay === undefined ? assistantContent(message.text, message.toolCalls ?? []) : replayedContent(replay.blocks),
        });
        return;
      }
      case "system-update":
        if (isBlankText(message.text)) return; // nothing to tell, and the API takes no blank text
        if (nativeSystemMessages && isNativePlacementValid(lowered.at(-1), messages[index + 1])) {
          lowered.push({ role: "system", content: [text(message.text)] });
        } else {
          appendToUserTurn(lowered, text(wrapSystemUpdate(message.text)));
        }
        return;
    }
  });
  return lowered;
}

/**
 * The API accepts a mid-conversation system message only right after a user message
 * (which may hold tool results), and only as the last message or before an assistant
 * turn. That rules out the first position, a place between a tool call and its result,
 * and adjacency to another system message.
 */
function isNativePlacementValid(previous: AnthropicMessage | undefined, next: RequestMessage | undefined): boolean {
  return previous?.role === "user" && (next === undefined || next.role === "assistant");
}

function text(value: string): AnthropicTextBlock {
  return { type: "text", text: value };
}

/** How an empty assistant reply is lowered: Anthropic accepts no empty text block. */
export const emptyReplyMarker = "(no reply text)";

function assistantContent(reply: string, toolCalls: readonly ToolCall[]): AnthropicAssistantMessage["content"] {
  const content: AnthropicAssistantMessage["content"] = [];
  // The API rejects empty text blocks: a reply that is only tool calls has none, and an
  // empty reply (a model may stop at once) is shown as a fixed marker, the same every time.
  // Whitespace-only text (such as "\n\n" before a tool call) is rejected like empty text.
  if (!isBlankText(reply)) content.push(text(reply));
  else if (toolCalls.length === 0) content.push(text(emptyReplyMarker));
  for (const call of toolCalls) content.push(toolUse(call.id, call.name, call.input));
  return content;
}

function toolUse(id: string, name: string, input: unknown): AnthropicToolUseBlock {
  return { type: "tool_use", id: anthropicToolId(id), name, input: anthropicToolInput(input) };
}

/**
 * A stored reply's content blocks, in their order: thinking blocks exactly as received,
 * text and tool calls under the same rules as `assistantContent`. Copies, so placing a
 * breakpoint never touches stored history.
 */
function replayedContent(blocks: readonly unknown[]): AnthropicAssistantMessage["content"] {
  const content: AnthropicAssistantMessage["content"] = [];
  for (const block of blocks) {
    if (isReplayOnlyBlock(block)) content.push(block as AnthropicReplayBlock);
    else if (isStoredText(block)) {
      if (!isBlankText(block.text)) content.push(text(block.text));
    } else if (isStoredToolUse(block)) content.push(toolUse(block.id, block.name, block.input));
  }
  if (!content.some((block) => block.type === "text" || block.type === "tool_use")) content.push(text(emptyReplyMarker));
  return content;
}

function isStoredText(block: unknown): block is { type: "text"; text: string } {
  return (block as { type?: unknown }).type === "text" && typeof (block as { text?: unknown }).text === "string";
}

function isStoredToolUse(block: unknown): block is { type: "tool_use"; id: string; name: string; input: unknown } {
  const candidate = block as { type?: unknown; id?: unknown; name?: unknown };
  return candidate.type === "tool_use" && typeof candidate.id === "string" && typeof candidate.name === "string";
}

/** Adds a block to the user turn at the end, opening one if the last message is not a user turn. */
function appendToUserTurn(lowered: AnthropicMessage[], block: AnthropicTextBlock | AnthropicToolResultBlock): void {
  const last = lowered.at(-1);
  if (last?.role !== "user") {
    lowered.push({ role: "user", content: [block] });
    return;
  }
  if (block.type === "tool_result") {
    // Tool results lead their user turn; they arrive together before any later text in
    // every valid history, so this keeps earlier blocks in place.
    const firstOther = last.content.findIndex((existing) => existing.type !== "tool_result");
    last.content.splice(firstOther === -1 ? last.content.length : firstOther, 0, block);
    return;
  }
  last.content.push(block);
}

/**
 * The tail breakpoint on the newest user turn's last block and the anchor on the user
 * turn before it. User turns hold only text and tool results, which may all carry one;
 * system messages and thinking blocks are never chosen.
 */
function placeMovingBreakpoints(messages: AnthropicMessage[], ttl: AnthropicCacheTtl): void {
  let placed = 0;
  for (let index = messages.length - 1; index >= 0 && placed < 2; index--) {
    const message = messages[index] as AnthropicMessage;
    if (message.role !== "user") continue;
    const block = message.content.at(-1);
    if (block === undefined) continue;
    block.cache_control = cacheControlFor(ttl, "messages");
    placed++;
  }
}
