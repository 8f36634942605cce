/**
 * Prefix extension: the property that keeps a provider's prompt cache warm within a
 * Context Epoch. Request N+1 extends request N when everything the provider hashes
 * before the messages is identical and N's serialized messages are the start of N+1's.
 *
 * Precisely, for the serialization `JSON.stringify` gives a lowered body:
 * - every field other than `messages` (model, max tokens, tools, system, stream) is
 *   byte-identical, and
 * - the serialization of N's `messages` array without its closing `]` is a string
 *   prefix of N+1's. Because each message is a complete JSON value, this is the same as
 *   "N+1's messages begin with N's messages, each byte-identical, in order".
 * - Anthropic only: before comparing, the moving breakpoints — the `cache_control`s that
 *   lowering puts on the last blocks of the two newest user turns — are removed from
 *   each body. They are the one byte difference a cache hit tolerates: the provider
 *   matches the prefix up to a breakpoint, not the breakpoint marker itself.
 *
 * Not an extension by this definition: a request that adds user-side content right
 * after the previous request's last user turn, because lowering merges it into that
 * turn (and, on Anthropic, turns a native system message there into wrapped text). That
 * needs a request that got no reply followed by a different one; the session runtime
 * resends an unanswered request unchanged instead (decision 005), so it does not happen.
 *
 * @module
 */

import type { AnthropicMessage, AnthropicMessagesBody, AnthropicTextBlock } from "./anthropic-lowering.ts";
import type { OpenAIChatBody } from "./openai-lowering.ts";

/** Whether the Anthropic body `next` extends `previous` as a prompt-cache prefix. */
export function extendsAnthropicPrefix(previous: AnthropicMessagesBody, next: AnthropicMessagesBody): boolean {
  return (
    fieldsBeforeMessages(previous) === fieldsBeforeMessages(next) &&
    isMessagePrefix(withoutMovingBreakpoints(previous.messages), withoutMovingBreakpoints(next.messages))
  );
}

/** Whether the Chat Completions body `next` extends `previous` as a prompt-cache prefix. */
export function extendsOpenAIPrefix(previous: OpenAIChatBody, next: OpenAIChatBody): boolean {
  return fieldsBeforeMessages(previous) === fieldsBeforeMessages(next) && isMessagePrefix(previous.messages, next.messages);
}

/** Whether the serialized `previous` messages are the start of the serialized `next` messages. */
export function isMessagePrefix(previous: readonly unknown[], next: readonly unknown[]): boolean {
  return JSON.stringify(next).startsWith(JSON.stringify(previous).slice(0, -1));
}

function fieldsBeforeMessages(body: { readonly messages: unknown }): string {
  const { messages: _messages, ...rest } = body;
  return JSON.stringify(rest);
}

/** A copy of `messages` without the moving breakpoints: no block of any message keeps a `cache_control`. */
export function withoutMovingBreakpoints(messages: readonly AnthropicMessage[]): AnthropicMessage[] {
  return messages.map((message) => {
    if (!message.content.some((block) => "cache_control" in block)) return message;
    const content = message.content.map((block) => {
      if (!("cache_control" in block)) return block;
      const { cache_control: _breakpoint, ...rest } = block as AnthropicTextBlock;
      return rest;
    });
    return { ...message, content } as AnthropicMessage;
  });
}
