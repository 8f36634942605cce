/**
 * context-host: keeps an AI agent's System Context correct and prompt-cache
 * friendly while its environment changes.
 *
 * @module
 */

export type { Clock, Logger } from "./base/clock.ts";
export type { Diagnostic, DiagnosticPhase } from "./base/diagnostics.ts";
export { SettingInvalid } from "./base/errors.ts";
export { createHost, type Host, type HostOptions } from "./host/host.ts";
export { definePlugin, type Plugin, type PluginApi, type PluginSource } from "./plugins/define.ts";
export type { PluginServices } from "./plugins/services.ts";
export {
  type AnthropicProviderOptions,
  ApiKeyMissing,
  anthropicModels,
  anthropicProvider,
  type CapabilityTable,
  lowerAnthropic,
  lowerOpenAI,
  type OpenAICompatibleProviderOptions,
  openAICompatibleProvider,
  openAIModels,
  type Provider,
  ProviderRejected,
  type ProviderReply,
  ProviderReplyInvalid,
  type ProviderRequest,
  ProviderTimedOut,
  ProviderUnavailable,
  type RequestMessage,
  type ToolCall,
  type ToolDefinition,
} from "./providers/index.ts";
export { type ScriptedProvider, type ScriptedTurn, scriptedProvider } from "./providers/scripted.ts";
export type { SourceEnv } from "./registry/registry.ts";
export {
  BoundaryContended,
  LocationInvalid,
  PromptInvalid,
  ProviderNotFound,
  ReplyInvalid,
  SessionBusy,
  SizeLimitExceeded,
  StoreBusy,
  StoreFailed,
  StoreFileChanged,
  TextNotWellFormed,
  ToolInputInvalid,
} from "./session/errors.ts";
export { readTool, readToolDefinition } from "./session/read-tool.ts";
export type { SessionLimits } from "./session/reply-check.ts";
export type { StepResult, Tool, ToolContext, ToolSpec } from "./session/runtime.ts";
export { SqliteSessionStore } from "./session/store/sqlite.ts";
export type { BoundaryCommitted, InFlightLease, ReplyCommitted } from "./session/store/store.ts";
export {
  type BoundaryCommit,
  type EpochReason,
  type EpochRecord,
  type MessageRole,
  type PendingPrompt,
  RevisionConflict,
  SessionCorrupt,
  SessionNotFound,
  type SessionRecord,
  type SessionStore,
  type StoredMessage,
} from "./session/store/store.ts";
export type { CoreSource } from "./sources/core-source.ts";
export type { InstructionSettings, ProjectFiles } from "./sources/instructions/service.ts";
export * as SystemContext from "./system-context/index.ts";
export {
  absent,
  DuplicateKeyError,
  type Generation,
  InitializationBlocked,
  isKey,
  type Json,
  type Key,
  parseSnapshot,
  type ReconcileResult,
  RenderError,
  type ReplacementResult,
  Snapshot,
  SnapshotInvalid,
  type Source,
  type SystemContext as SystemContextCarrier,
  unavailable,
  ValueRejected,
} from "./system-context/index.ts";
