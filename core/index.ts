/**
 * context-host, for hosts: `createHost` and what it takes and returns, the providers a
 * host passes it, and the errors it throws. Plugin authors import `context-host/plugin`;
 * the pure core is `context-host/system-context`; lowering for custom adapters is
 * `context-host/providers`; the durable store is `context-host/store`.
 *
 * `definePlugin` and the `SystemContext` loader values are exported here as well, so
 * plugins written against this entry keep working. The service types a host shares with
 * plugins (`Clock`, `Logger`, `SourceEnv`) are exported from `context-host/plugin`.
 *
 * @module
 */

export { type Diagnostic, type DiagnosticPhase, escapeControl, formatDiagnostic } from "./base/diagnostics.ts";
export { ContextHostError, DisposersFailed, SettingInvalid } from "./base/errors.ts";
export {
  type AdmittedUpdate,
  type ContextEngine,
  type ContextEngineOptions,
  createContextEngine,
  type EngineBoundary,
  type EngineBoundaryInput,
  type EngineEpoch,
  type EnginePreview,
} from "./host/engine.ts";
export { createHost, type Host, type HostOptions } from "./host/host.ts";
export {
  type FoundPlugin,
  findPlugins,
  formatOrigin,
  type PluginEntrySpec,
  type PluginPackageProblem,
  type PluginsFound,
  readPluginEntry,
} from "./host/plugin-listing.ts";
export { type RenderBaselineOptions, type RenderedBaseline, renderBaseline } from "./host/render-baseline.ts";
export { checkSettings as checkHostSettings } from "./host/settings.ts";
export { McpClientMissing } from "./mcp/errors.ts";
export type { McpResourceInfo, McpServerInfo } from "./mcp/info.ts";
export type { McpServerSettings, McpServersSettings } from "./mcp/settings.ts";
export { definePlugin, SystemContext } from "./plugins/api.ts";
export type { LoadTimings, PluginEvent, PluginInfo, PluginOrigin } from "./plugins/events.ts";
export { type AnthropicProviderOptions, anthropicProvider } from "./providers/anthropic-provider.ts";
export {
  ApiKeyMissing,
  ProviderRejected,
  ProviderTimedOut,
  ProviderUnavailable,
} from "./providers/errors.ts";
export { type OpenAICompatibleProviderOptions, openAICompatibleProvider } from "./providers/openai-compatible-provider.ts";
export { defaultRetryPolicy, type RetryPolicy } from "./providers/retry.ts";
export { type ScriptedProvider, type ScriptedTurn, scriptedProvider } from "./providers/scripted.ts";
export type { ConnectionOptions } from "./providers/transport.ts";
export {
  type ContextProxy,
  type ContextProxyOptions,
  createContextProxy,
  defaultUpstreams,
  type ProxyBoundaryEvent,
} from "./proxy/proxy.ts";
export { type ApiFamily, BodyInvalid, type WireName } from "./proxy/wire.ts";
export type { BoundaryPreview } from "./session/boundary-decision.ts";
export {
  BoundaryContended,
  HostClosed,
  LocationInvalid,
  ProjectFilesUnavailable,
  PromptInvalid,
  ProviderNotFound,
  ProviderReplyInvalid,
  SessionBusy,
  SizeLimitExceeded,
  StepAborted,
  TextNotWellFormed,
  ToolInputInvalid,
} from "./session/errors.ts";
export type {
  Provider,
  ProviderContent,
  ProviderReply,
  ProviderRequest,
  RequestMessage,
  SendOptions,
  TokenUsage,
  ToolCall,
} from "./session/provider.ts";
export { readTool, readToolDefinition } from "./session/read-tool.ts";
export type { SessionLimits } from "./session/reply-check.ts";
export type { BoundaryEvent, StepOptions, StepResult, Tool, ToolContext, ToolSpec } from "./session/runtime.ts";
export type { ToolDefinition } from "./session/tool-definition.ts";
export type { CoreSource } from "./sources/core-source.ts";
export { type InstructionSettings, type ProjectFiles, ProjectFileUnreadable } from "./sources/instructions/service.ts";
