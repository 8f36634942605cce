/**
 * context-host/ai-sdk: the context engine in an AI SDK agent loop. Wrap a model with
 * `contextMiddleware(engine)` (`wrapLanguageModel({ model, middleware })`) and name the
 * session in each call's `providerOptions["context-host"]`; every `generateText`,
 * `streamText` or `ToolLoopAgent` step then sends the Baseline and the admitted
 * Mid-Conversation System Messages, cache-friendly. `ai` and `@ai-sdk/provider` are
 * optional peer dependencies: this entry imports neither.
 *
 * @module
 */

export {
  type CallOptionsLike,
  type ContextCallOptions,
  type ContextMiddleware,
  type ContextMiddlewareOptions,
  contextMiddleware,
  contextOptionsKey,
  type ModelLike,
  type PromptMessageLike,
} from "./host/ai-sdk.ts";
