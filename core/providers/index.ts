/**
 * Providers: lowering a provider-neutral ProviderRequest to each model API's wire
 * format, and adapters that send it over HTTP. Within a Context Epoch every lowered
 * request extends the previous one, so the provider's prompt cache holds.
 *
 * @module
 */

export { ProviderReplyInvalid } from "../session/errors.ts";
export type {
  Provider,
  ProviderContent,
  ProviderReply,
  ProviderRequest,
  RequestMessage,
  TokenUsage,
  ToolCall,
} from "../session/provider.ts";
export type { ToolDefinition } from "../session/tool-definition.ts";
export {
  type AnthropicLoweringOptions,
  type AnthropicMessage,
  type AnthropicMessagesBody,
  type AnthropicModelCapabilities,
  anthropicCapabilities,
  anthropicDefaults,
  anthropicModels,
  emptyReplyMarker,
  lowerAnthropic,
} from "./anthropic-lowering.ts";
export { type AnthropicProviderOptions, anthropicApiVersion, anthropicProvider } from "./anthropic-provider.ts";
export {
  type AnthropicCacheTtl,
  anthropicToolId,
  anthropicToolIdPattern,
  anthropicToolInput,
} from "./anthropic-wire.ts";
export {
  type CacheCostOptions,
  type CachedRequest,
  type CacheMiss,
  type CacheMissReason,
  type CacheReplayOptions,
  type CountTokens,
  estimateTokens,
  replayAnthropicCache,
  replayCache,
  replayOpenAICache,
} from "./cache-model.ts";
export { type CapabilityTable, capabilitiesFor, type ModelRule } from "./capabilities.ts";
export { ApiKeyMissing, ProviderRejected, ProviderTimedOut, ProviderUnavailable } from "./errors.ts";
export { explainPrefix, type PrefixDivergence, type PrefixExplanation, type PrefixKind } from "./explain-prefix.ts";
export { type OpenAICompatibleProviderOptions, openAICompatibleProvider } from "./openai-compatible-provider.ts";
export {
  lowerOpenAI,
  type OpenAIChatBody,
  type OpenAILoweringOptions,
  type OpenAIMessage,
  type OpenAIModelCapabilities,
  type OpenAITextPart,
  openAICapabilities,
  openAIDefaults,
  openAIModels,
} from "./openai-lowering.ts";
export { extendsAnthropicPrefix, extendsOpenAIPrefix } from "./prefix-extension.ts";
export { costOf, type ModelPrice, type PriceRow, priceOf, pricingTable } from "./pricing.ts";
export { defaultRetryPolicy, type RetryPolicy } from "./retry.ts";
export type { ConnectionOptions } from "./transport.ts";
export { escapeXml, wrapSummary, wrapSystemUpdate } from "./wrapped-text.ts";
