// Owns the `anthropic` adapter: a Provider that lowers each ProviderRequest to the
// Messages API and sends it with the shared HTTP plumbing (timeout, retries,
// byte-identical resends, streamed or JSON replies); what is Anthropic's is here.

import type { Provider } from "../session/provider.ts";
import type { ToolDefinition } from "../session/tool-definition.ts";
import { type AnthropicModelCapabilities, anthropicCapabilities, anthropicModels, lowerAnthropic } from "./anthropic-lowering.ts";
import { anthropicReplyFromMessage, anthropicReplyFromStream } from "./anthropic-reply.ts";
import type { AnthropicCacheTtl } from "./anthropic-wire.ts";
import type { CapabilityTable } from "./capabilities.ts";
import { ApiKeyMissing } from "./errors.ts";
import { httpProvider } from "./http-provider.ts";
import { type ConnectionOptions, withoutTrailingSlash } from "./transport.ts";

/** Options of `anthropicProvider`. */
export interface AnthropicProviderOptions extends ConnectionOptions {
  /** The API key; when given, the environment is not read. */
  readonly apiKey?: string;
  /** The environment variable holding the API key, read at each call. Default `ANTHROPIC_API_KEY`. */
  readonly apiKeyEnv?: string;
  /** Default `https://api.anthropic.com`; requests go to `<baseURL>/v1/messages`. */
  readonly baseURL?: string;
  /** Which models accept native mid-conversation system messages, and their `max_tokens`. Default `anthropicModels`. */
  readonly models?: CapabilityTable<AnthropicModelCapabilities>;
  /** Tools declared with every request. */
  readonly tools?: readonly ToolDefinition[];
  /** Extra headers, such as `anthropic-beta`. */
  readonly headers?: Readonly<Record<string, string>>;
  /** Prompt-cache lifetime of the breakpoints: `"5m"` (default), `"1h-system"` (the Baseline's 1 h), `"1h"`. */
  readonly cacheTtl?: AnthropicCacheTtl;
}

/** The `anthropic-version` header this adapter speaks. */
export const anthropicApiVersion = "2023-06-01";

/**
 * A Provider for the Anthropic Messages API. Each `send` lowers the request with
 * `lowerAnthropic`, serializes it once, and POSTs that same string on every attempt.
 * Errors: `ApiKeyMissing`, `ProviderRejected` (4xx with the API's message),
 * `ProviderUnavailable`, `ProviderTimedOut`, `ProviderReplyInvalid`.
 */
export function anthropicProvider(options: AnthropicProviderOptions = {}): Provider {
  const apiKeyEnv = options.apiKeyEnv ?? "ANTHROPIC_API_KEY";
  const models = options.models ?? anthropicModels;
  const http = httpProvider(
    {
      provider: "anthropic",
      url: `${withoutTrailingSlash(options.baseURL ?? "https://api.anthropic.com")}/v1/messages`,
      headers: () => {
        const apiKey = options.apiKey ?? process.env[apiKeyEnv];
        if (apiKey === undefined || apiKey === "") throw new ApiKeyMissing({ provider: "anthropic", variable: apiKeyEnv });
        return { "anthropic-version": anthropicApiVersion, "x-api-key": apiKey };
      },
      lower: (request) =>
        lowerAnthropic(request, anthropicCapabilities(request.model, models), {
          tools: options.tools ?? [],
          ...(options.cacheTtl === undefined ? {} : { cacheTtl: options.cacheTtl }),
        }),
      readers: { fromJson: anthropicReplyFromMessage, fromStream: anthropicReplyFromStream },
    },
    options,
  );
  return {
    async send(request, call) {
      const reply = await http.send(request, call);
      // Thinking blocks belong to the model that wrote them: record which, for replay.
      const content = reply.providerContent;
      return content === undefined ? reply : { ...reply, providerContent: { ...content, model: request.model } };
    },
  };
}
