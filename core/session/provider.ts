// Owns the provider-neutral request and reply shapes of the Host API (SPEC section 5).
// Lowering to each API's wire format lives beside this file, one provider per file.

import Type from "typebox";

/** A tool call requested by the model. */
export interface ToolCall {
  readonly id: string;
  readonly name: string;
  readonly input: unknown;
}

/**
 * Tokens one reply used, as the provider reported them. `input` is the uncached input
 * (Anthropic's `input_tokens`; OpenAI's `prompt_tokens` less `cached_tokens`), so the four
 * counts add up to everything the request and reply took.
 */
export interface TokenUsage {
  readonly input: number;
  /** Input read from the prompt cache (`cache_read_input_tokens`, `prompt_tokens_details.cached_tokens`). */
  readonly cacheRead: number;
  /** Input written to the prompt cache (`cache_creation_input_tokens`; OpenAI reports none). */
  readonly cacheWrite: number;
  /** Of `cacheWrite`, the part written with the 1-hour TTL, when the provider says. */
  readonly cacheWrite1h?: number;
  readonly output: number;
}

/**
 * Content of a reply that the provider requires back unchanged in later requests, such as
 * Anthropic thinking blocks with their signatures: the reply's content blocks in order,
 * opaque to the host. Only the adapter of `provider` lowers it, and only for `model`.
 */
export interface ProviderContent {
  readonly provider: string;
  readonly model: string;
  readonly blocks: readonly unknown[];
}

/** One message of projected history, in provider-neutral form. */
export type RequestMessage =
  | { readonly role: "user"; readonly text: string }
  | {
      readonly role: "assistant";
      readonly text: string;
      readonly toolCalls?: readonly ToolCall[];
      /** Provider content to replay verbatim (see `ProviderContent`). */
      readonly providerContent?: ProviderContent;
    }
  | { readonly role: "tool"; readonly callId: string; readonly name: string; readonly result: string }
  /** A Mid-Conversation System Message; lowering decides native role or wrapped fallback. */
  | { readonly role: "system-update"; readonly text: string }
  /** A compaction summary, first in the history it replaces. */
  | { readonly role: "summary"; readonly text: string };

/** What the host sends at a Safe Provider-Turn Boundary. */
export interface ProviderRequest {
  readonly provider: string;
  readonly model: string;
  /** `[systemPrompt, baseline]`; the host system prompt is left out when not given. */
  readonly system: readonly string[];
  readonly messages: readonly RequestMessage[];
  /** The session the request belongs to; adapters may pass it on as a cache routing key. */
  readonly sessionId?: string;
  /** The Context Epoch the request was built in and why it began (`initial`, `compaction`, `switch`, `move`, `replacement`). */
  readonly epoch?: { readonly number: number; readonly reason: string };
}

/** The model's reply. */
export interface ProviderReply {
  readonly text: string;
  readonly toolCalls?: readonly ToolCall[];
  /** Token counts of this reply, when the provider reported them. */
  readonly usage?: TokenUsage;
  /** Content to store with the reply and send back unchanged (thinking blocks). */
  readonly providerContent?: ProviderContent;
  /** The model declined to answer (an OpenAI `refusal`); `text` then carries the refusal too. */
  readonly refusal?: string;
}

/** What the caller of `send` may ask for besides the reply. */
export interface SendOptions {
  /**
   * Each piece of the reply's text as it arrives, in order (one piece when the reply is not
   * streamed). A retried attempt starts its text over: `attempt` (from 1) tells them apart.
   */
  readonly onText?: (text: string, attempt: number) => void;
  /** Cancels the call: `send` rejects at once and tries no more. */
  readonly signal?: AbortSignal;
}

/** A model API. */
export interface Provider {
  send(request: ProviderRequest, options?: SendOptions): Promise<ProviderReply>;
}

// The port's shapes as TypeBox schemas: the store checks stored tool calls with
// `ToolCallSchema`, and the runtime checks every reply with `ProviderReplySchema` before
// anything of it is written (fields beyond these are allowed and not stored).

/** A tool call, as a schema (its `input` may be absent: JSON has no `undefined`). */
export const ToolCallSchema = Type.Object({ id: Type.String(), name: Type.String(), input: Type.Optional(Type.Unknown()) });

const Count = Type.Integer({ minimum: 0 });

/** `TokenUsage`, as a schema. */
export const TokenUsageSchema = Type.Object({
  input: Count,
  cacheRead: Count,
  cacheWrite: Count,
  cacheWrite1h: Type.Optional(Count),
  output: Count,
});

/** `ProviderContent`, as a schema. */
export const ProviderContentSchema = Type.Object({
  provider: Type.String(),
  model: Type.String(),
  blocks: Type.Array(Type.Unknown()),
});

/** A provider reply, as a schema. */
export const ProviderReplySchema = Type.Object({
  text: Type.String(),
  toolCalls: Type.Optional(Type.Array(ToolCallSchema)),
  usage: Type.Optional(TokenUsageSchema),
  providerContent: Type.Optional(ProviderContentSchema),
  refusal: Type.Optional(Type.String()),
});
