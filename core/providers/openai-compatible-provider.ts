// Owns the `openai-compatible` adapter: a Provider for the Chat Completions API of
// OpenAI and of the local servers that copy it, sending with the shared HTTP plumbing
// (timeout, retries, byte-identical resends, streamed or JSON replies).

import type { Provider } from "../session/provider.ts";
import type { ToolDefinition } from "../session/tool-definition.ts";
import type { CapabilityTable } from "./capabilities.ts";
import { httpProvider } from "./http-provider.ts";
import { lowerOpenAI, type OpenAIModelCapabilities, openAICapabilities } from "./openai-lowering.ts";
import { openAIReplyFromCompletion, openAIReplyFromStream } from "./openai-reply.ts";
import { type ConnectionOptions, withoutTrailingSlash } from "./transport.ts";

/** Options of `openAICompatibleProvider`. */
export interface OpenAICompatibleProviderOptions extends ConnectionOptions {
  /** The API root, such as `https://api.openai.com/v1` or `http://127.0.0.1:8080/v1`; requests go to `<baseURL>/chat/completions`. */
  readonly baseURL: string;
  /** The API key; when given (even empty), the environment is not read. */
  readonly apiKey?: string;
  /**
   * The environment variable holding the API key, read at each call. Default
   * `OPENAI_API_KEY`. Optional: without a key no `authorization` header is sent, as
   * local servers expect. Pass `apiKey` to keep a hosted key away from another server.
   */
  readonly apiKeyEnv?: string;
  /** Which models take native instruction roles mid-conversation. Default: none (wrapped fallback). `openAIModels` declares OpenAI's. */
  readonly models?: CapabilityTable<OpenAIModelCapabilities>;
  /** Tools declared with every request. */
  readonly tools?: readonly ToolDefinition[];
  /** Extra headers. */
  readonly headers?: Readonly<Record<string, string>>;
}

/**
 * A Provider for OpenAI Chat Completions and compatible servers. Each `send` lowers the
 * request with `lowerOpenAI`, serializes it once, and POSTs that same string on every
 * attempt. Errors: `ProviderRejected` (4xx with the API's message),
 * `ProviderUnavailable`, `ProviderTimedOut`, `ProviderReplyInvalid`.
 */
export function openAICompatibleProvider(options: OpenAICompatibleProviderOptions): Provider {
  const apiKeyEnv = options.apiKeyEnv ?? "OPENAI_API_KEY";
  const models = options.models ?? [];
  return httpProvider(
    {
      provider: "openai-compatible",
      url: `${withoutTrailingSlash(options.baseURL)}/chat/completions`,
      headers: (): Record<string, string> => {
        const apiKey = options.apiKey ?? process.env[apiKeyEnv] ?? "";
        return apiKey === "" ? {} : { authorization: `Bearer ${apiKey}` };
      },
      lower: (request) => lowerOpenAI(request, openAICapabilities(request.model, models), { tools: options.tools ?? [] }),
      streamFields: (request) =>
        openAICapabilities(request.model, models).streamUsage === true ? { stream_options: { include_usage: true } } : {},
      readers: { fromJson: openAIReplyFromCompletion, fromStream: openAIReplyFromStream },
    },
    options,
  );
}
