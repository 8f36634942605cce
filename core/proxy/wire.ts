// Owns what the three wire formats have in common: a client's request read as a
// conversation, the error a body the proxy cannot read gets, and the port each format
// implements (read, place, read the usage, shape an error).

import { ContextHostError } from "../base/errors.ts";
import type { TokenUsage } from "../session/provider.ts";
import type { Item, PlacedUpdate } from "./placement.ts";

/** Which API a route speaks: its upstream, its credentials, its error shape. */
export type ApiFamily = "anthropic" | "openai";

/** The wire formats the proxy reads. */
export type WireName = "messages" | "responses" | "chat-completions";

/** A client's request, read as one turn of a conversation. */
export interface ConversationRequest {
  readonly model: string;
  readonly stream: boolean;
  /** The body's list as sent: `messages`, or the Responses `input` items. */
  readonly items: readonly Item[];
  /** Indices into `items` of the conversation's history, what the engine sees (no instruction messages). */
  readonly history: readonly number[];
  /** Where the Baseline goes in `items` (after the client's leading instruction messages); Anthropic's goes in `system`. */
  readonly leading: number;
  /** Text the client states its instructions and environment in (system prompt, instruction messages, the opening turns). */
  readonly statedText: string;
  /** Names of the tools the request offers, in order. */
  readonly toolNames: readonly string[];
  /** A conversation or session id the client put in the body (`metadata.user_id`, `prompt_cache_key`). */
  readonly clientSessionId: string | undefined;
  /** Why context cannot be placed in this request: it is forwarded unchanged. */
  readonly passThrough?: string;
}

/** How the model of a request takes context. */
export interface ModelPlacement {
  /** The model takes native instruction messages inside the conversation. */
  readonly isNative: boolean;
  /** The role of the Baseline message and of native updates (OpenAI wires). */
  readonly role: "system" | "developer";
}

/** What the proxy puts in a request: the engine's answer. */
export interface ContextToPlace {
  readonly baseline: string;
  readonly updates: readonly PlacedUpdate[];
}

/** Reads token usage from a response, as it passes (the data of stream events that mention usage) or whole (JSON). */
export interface UsageReader {
  /** The parsed data of one stream event. */
  data(data: unknown): void;
  json(body: unknown): void;
  usage(): TokenUsage | undefined;
}

/** One wire format. */
export interface WireFormat {
  readonly name: WireName;
  readonly api: ApiFamily;
  /** Reads a parsed body; throws `BodyInvalid` naming what is wrong and where. */
  read(body: unknown): ConversationRequest;
  /** The body to forward: the client's, with the Baseline and the updates in place. */
  place(
    body: Readonly<Record<string, unknown>>,
    request: ConversationRequest,
    context: ContextToPlace,
    placement: ModelPlacement,
  ): Record<string, unknown>;
  /** A new usage reader for one response. */
  usageReader(): UsageReader;
  /** An error body in the API's own shape. */
  errorBody(status: number, message: string): unknown;
}

/** A request body the proxy cannot read: the client gets a 400 and nothing is forwarded. */
export class BodyInvalid extends ContextHostError {
  /** Where in the body: a JSON pointer (`/messages/3/content`), or `(body)`. */
  readonly at: string;
  constructor(options: { readonly at: string; readonly reason: string }) {
    super(`request body ${options.at}: ${options.reason}`);
    this.at = options.at;
  }
}

/** The text of a content value: a string, or the `text` of its text parts. */
export function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  let text = "";
  for (const part of content) {
    if (part !== null && typeof part === "object" && typeof (part as { text?: unknown }).text === "string") {
      text += `${(part as { text: string }).text}\n`;
    }
  }
  return text;
}

/** A client's list read as a conversation: what `ConversationRequest` takes from it. */
export interface ListRead {
  readonly history: readonly number[];
  readonly leading: number;
  readonly statedText: string;
}

/**
 * Reads a client's list: its history is every item but its instruction messages, the Baseline
 * goes after the leading instruction messages, and the client states its instructions and
 * environment in `systemText`, its instruction messages and its first `openingTurns` history
 * messages (those `isMessage` takes; default all).
 */
export function readList(
  items: readonly Item[],
  isInstruction: (item: Item) => boolean,
  options: { readonly systemText: string; readonly openingTurns: number; readonly isMessage?: (item: Item) => boolean },
): ListRead {
  const history: number[] = [];
  let leading = 0;
  while (leading < items.length && isInstruction(items[leading] as Item)) leading++;
  let statedText = `${options.systemText}\n`;
  for (let i = 0; i < items.length; i++) {
    const item = items[i] as Item;
    if (isInstruction(item)) statedText += `${textOf(item.content)}\n`;
    else {
      if (history.length < options.openingTurns && (options.isMessage?.(item) ?? true)) statedText += `${textOf(item.content)}\n`;
      history.push(i);
    }
  }
  return { history, leading, statedText };
}

/**
 * Whether an item of an OpenAI list is an instruction: any item in the `system` or `developer`
 * role (messages, and items such as Codex's `additional_tools`).
 */
export const isOpenAIInstruction = (item: Item): boolean => item.role === "system" || item.role === "developer";

/** A string the client set, or `undefined` for none, `null` or an empty one (`prompt_cache_key`). */
export function nonEmpty(value: unknown): string | undefined {
  return typeof value === "string" && value !== "" ? value : undefined;
}

/** A usage reader that keeps the latest usage its two readers find (the OpenAI wires report it whole, once). */
export function latestUsage(
  ofData: (data: unknown) => TokenUsage | undefined,
  ofJson: (json: unknown) => TokenUsage | undefined,
): UsageReader {
  let found: TokenUsage | undefined;
  return {
    data(data) {
      found = ofData(data) ?? found;
    },
    json(json) {
      found = ofJson(json) ?? found;
    },
    usage: () => found,
  };
}

/** A TypeBox validator's first error as a `BodyInvalid`. */
export function bodyInvalidOf(errors: readonly { readonly instancePath: string; readonly message: string }[]): BodyInvalid {
  const first = errors[0];
  return new BodyInvalid({ at: first?.instancePath || "(body)", reason: first?.message ?? "not the shape this API takes" });
}

/** Names of a request's tools: `name`, else the function's `name`, else `type`. */
export function toolNamesOf(tools: unknown): string[] {
  if (!Array.isArray(tools)) return [];
  return tools.map((tool) => {
    const { name, type, function: fn } = (tool ?? {}) as { name?: unknown; type?: unknown; function?: { name?: unknown } };
    if (typeof name === "string") return name;
    if (typeof fn?.name === "string") return fn.name;
    return typeof type === "string" ? type : "?";
  });
}
