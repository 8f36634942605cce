// Owns `contextMiddleware`: the context engine as an AI SDK language model middleware
// (`wrapLanguageModel({ model, middleware })`, decision 102). Before each call of the
// wrapped model (each step of `generateText`, `streamText` or a `ToolLoopAgent`) it runs
// the session's boundary and rebuilds the prompt: the caller's own leading system
// messages, the Baseline as a system message, then the caller's messages with each
// admitted Mid-Conversation System Message after the message it was admitted after —
// a `role: "system"` message where the provider takes one natively, else `<system-update>`
// text in the adjacent user message. The AI SDK is not imported: its types are matched by
// shape, so `ai` and `@ai-sdk/provider` stay optional peers.

import { SettingInvalid } from "../base/errors.ts";
import { anthropicCapabilities } from "../providers/anthropic-lowering.ts";
import { openAICapabilities, openAIModels } from "../providers/openai-lowering.ts";
import { wrapSystemUpdate } from "../providers/wrapped-text.ts";
import type { ContextEngine } from "./engine.ts";

/** A prompt message as the AI SDK's language model specification has it (only what is read here). */
export interface PromptMessageLike {
  readonly role: string;
  readonly content: unknown;
  readonly providerOptions?: unknown;
}

/** The call options the middleware reads and rewrites. */
export interface CallOptionsLike {
  readonly prompt: readonly PromptMessageLike[];
  readonly providerOptions?: Readonly<Record<string, unknown>> | undefined;
}

/** The wrapped model, as the middleware sees it. */
export interface ModelLike {
  readonly provider: string;
  readonly modelId: string;
}

/** What `providerOptions["context-host"]` of a call holds. */
export interface ContextCallOptions {
  readonly sessionId: string;
  /** The folder the session works in; default the process's working folder. */
  readonly location?: string;
}

/** Options of `contextMiddleware`. */
export interface ContextMiddlewareOptions {
  /**
   * Whether a model takes `role: "system"` messages inside the conversation. Default: our
   * capability tables (`anthropicModels` for `anthropic.*` providers, `openAIModels` for
   * `openai.*`); any other provider gets the `<system-update>` fallback.
   */
  readonly nativeSystemMessages?: (model: ModelLike) => boolean;
}

/** An AI SDK language model middleware (specification v4). */
export interface ContextMiddleware {
  readonly specificationVersion: "v4";
  transformParams<Params extends CallOptionsLike>(options: {
    readonly type: "generate" | "stream";
    readonly params: Params;
    readonly model: ModelLike;
  }): Promise<Params>;
}

/** The key of the call's provider options that names the session. */
export const contextOptionsKey = "context-host";

function defaultNative(model: ModelLike): boolean {
  if (model.provider.startsWith("anthropic")) return anthropicCapabilities(model.modelId).nativeSystemMessages;
  if (model.provider.startsWith("openai")) return openAICapabilities(model.modelId, openAIModels).systemUpdateRole !== "wrapped";
  return false;
}

/** The session a call names, or `undefined` when it names none (the call passes through unchanged). */
function sessionOf(params: CallOptionsLike): ContextCallOptions | undefined {
  const options = params.providerOptions?.[contextOptionsKey];
  if (options === undefined) return undefined;
  const { sessionId, location } = (options ?? {}) as { sessionId?: unknown; location?: unknown };
  if (typeof sessionId !== "string" || sessionId === "" || (location !== undefined && typeof location !== "string")) {
    throw new SettingInvalid({
      setting: `providerOptions["${contextOptionsKey}"]`,
      reason: `must be { sessionId: string, location?: string }, got ${JSON.stringify(options)}`,
    });
  }
  return { sessionId, ...(location === undefined ? {} : { location }) };
}

const text = (value: string) => ({ type: "text", text: value });

/**
 * The context engine as an AI SDK middleware: wrap a model with it and name the session in
 * each call's `providerOptions["context-host"]` (`{ sessionId, location }`). A call that
 * names no session passes through unchanged.
 */
export function contextMiddleware(engine: ContextEngine, options: ContextMiddlewareOptions = {}): ContextMiddleware {
  const decide = options.nativeSystemMessages ?? defaultNative;
  const decided = new Map<string, boolean>();
  const native = (model: ModelLike) => {
    const key = `${model.provider}\u0000${model.modelId}`;
    let isNative = decided.get(key);
    if (isNative === undefined) {
      isNative = decide(model);
      decided.set(key, isNative);
    }
    return isNative;
  };
  return {
    specificationVersion: "v4",
    async transformParams({ params, model }) {
      const session = sessionOf(params);
      if (session === undefined) return params;
      const prompt = params.prompt;
      const { baseline, updates } = await engine.boundary(session.sessionId, {
        location: session.location ?? process.cwd(),
        provider: model.provider,
        model: model.modelId,
        messages: prompt,
      });
      const leading = prompt.findIndex((message) => message.role !== "system");
      const split = leading === -1 ? prompt.length : leading;
      const isNative = native(model);
      const rebuilt: PromptMessageLike[] = [...prompt.slice(0, split), { role: "system", content: baseline }];
      let next = 0;
      const admit = (position: number) => {
        for (; next < updates.length && (updates[next] as { position: number }).position <= position; next++) {
          const update = (updates[next] as { text: string }).text;
          const last = rebuilt.at(-1);
          // Natively only right after a user or tool turn (as the APIs require); else in a user message.
          if (isNative && (last?.role === "user" || last?.role === "tool")) rebuilt.push({ role: "system", content: update });
          else if (last?.role === "user" && Array.isArray(last.content)) {
            rebuilt[rebuilt.length - 1] = { ...last, content: [...last.content, text(wrapSystemUpdate(update))] };
          } else rebuilt.push({ role: "user", content: [text(wrapSystemUpdate(update))] });
        }
      };
      admit(split);
      for (let i = split; i < prompt.length; i++) {
        rebuilt.push(prompt[i] as PromptMessageLike);
        admit(i + 1);
      }
      return { ...params, prompt: rebuilt };
    },
  };
}
