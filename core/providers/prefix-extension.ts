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
 * - Anthropic only: before comparing, the moving breakpoint — the `cache_control` that
 *   lowering puts on the last content block of the last message — is removed from each
 *   body. It is the one byte difference a cache hit tolerates: the provider matches the
 *   prefix up to a breakpoint, not the breakpoint marker itself.
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
import { isReplayOnlyBlock } from "./anthropic-wire.ts";
import type { OpenAIChatBody } from "./openai-lowering.ts";

/** Whether the Anthropic body `next` extends `previous` as a prompt-cache prefix. */
export function extendsAnthropicPrefix(previous: AnthropicMessagesBody, next: AnthropicMessagesBody): boolean {
  return (
    fieldsBeforeMessages(previous) === fieldsBeforeMessages(next) &&
    isMessagePrefix(withoutMovingBreakpoint(previous.messages), withoutMovingBreakpoint(next.messages))
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

/** A copy of `messages` whose last block has no `cache_control`. */
export function withoutMovingBreakpoint(messages: readonly AnthropicMessage[]): AnthropicMessage[] {
  const last = messages.at(-1);
  if (last === undefined) return [];
  // The moving breakpoint sits on the last block that can hold one (thinking blocks cannot).
  const holder = last.content.findLastIndex((block) => !isReplayOnlyBlock(block));
  const content = last.content.map((block, index) => {
    if (index !== holder) return block;
    const { cache_control: _breakpoint, ...rest } = block as AnthropicTextBlock;
    return rest;
  });
  return [...messages.slice(0, -1), { ...last, content } as AnthropicMessage];
}
