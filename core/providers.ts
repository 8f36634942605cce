/**
 * context-host/providers: how a provider-neutral `ProviderRequest` is lowered to each
 * model API's wire body, the model capability tables that decide it, and the checks
 * that one lowered request extends the previous one (so the prompt cache holds). For
 * writing or testing an adapter; the ready adapters (`anthropicProvider`,
 * `openAICompatibleProvider`, `scriptedProvider`) are exported from `context-host`.
 *
 * @module
 */

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
} from "./providers/anthropic-lowering.ts";
export { anthropicApiVersion } from "./providers/anthropic-provider.ts";
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
} from "./providers/cache-model.ts";
export { type CapabilityTable, capabilitiesFor, type ModelRule } from "./providers/capabilities.ts";
export { explainPrefix, type PrefixDivergence, type PrefixExplanation, type PrefixKind } from "./providers/explain-prefix.ts";
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
} from "./providers/openai-lowering.ts";
export { extendsAnthropicPrefix, extendsOpenAIPrefix } from "./providers/prefix-extension.ts";
export { costOf, type ModelPrice, type PriceRow, priceOf, pricingTable } from "./providers/pricing.ts";
export { escapeXml, wrapSummary, wrapSystemUpdate } from "./providers/wrapped-text.ts";
