// Owns the provider-neutral request and reply shapes of the Host API (SPEC section 5).
// Lowering to each API's wire format lives beside this file, one provider per file.

import Type from "typebox";

/** A tool call requested by the model. */
export interface ToolCall {
  readonly id: string;
  readonly name: string;
  readonly input: unknown;
}

/** One message of projected history, in provider-neutral form. */
export type RequestMessage =
  | { readonly role: "user"; readonly text: string }
  | { readonly role: "assistant"; readonly text: string; readonly toolCalls?: readonly ToolCall[] }
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
}

/** The model's reply. */
export interface ProviderReply {
  readonly text: string;
  readonly toolCalls?: readonly ToolCall[];
}

/** A model API. */
export interface Provider {
  send(request: ProviderRequest): Promise<ProviderReply>;
}

// The port's shapes as TypeBox schemas: the store checks stored tool calls with
// `ToolCallSchema`, and the runtime checks every reply with `ProviderReplySchema` before
// anything of it is written (fields beyond these, such as usage, are allowed and not stored).

/** A tool call, as a schema (its `input` may be absent: JSON has no `undefined`). */
export const ToolCallSchema = Type.Object({ id: Type.String(), name: Type.String(), input: Type.Optional(Type.Unknown()) });

/** A provider reply, as a schema. */
export const ProviderReplySchema = Type.Object({
  text: Type.String(),
  toolCalls: Type.Optional(Type.Array(ToolCallSchema)),
});
