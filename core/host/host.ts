// Owns the Host: `createHost` opens the durable store, starts the context sources
// (their composition root is `context-sources.ts`), builds the session runtime and
// exposes the Host API.

import type { Diagnostic } from "../base/diagnostics.ts";
import { SettingInvalid } from "../base/errors.ts";
import type { Scope as ScopeType } from "../base/scope.ts";
import { Scope } from "../base/scope.ts";
import type { McpServerInfo } from "../mcp/info.ts";
import type { PluginEvent, PluginInfo } from "../plugins/events.ts";
import type { BoundaryPreview } from "../session/boundary-decision.ts";
import { readTool } from "../session/read-tool.ts";
import { type BoundaryEvent, SessionRuntime, type StepOptions, type StepResult } from "../session/runtime.ts";
import type { EpochRecord, StoredMessage } from "../session/store/store.ts";
import { engineOf, startEngineParts } from "./engine.ts";
import { describe, type HostOptions, pick } from "./host-options.ts";
import { checkSettings } from "./settings.ts";

export type { HostOptions } from "./host-options.ts";

/** The Host API (SPEC section 5). */
export interface Host {
  createSession(session: { location: string; provider: string; model: string }): Promise<string>;
  prompt(id: string, text: string): Promise<void>;
  /** One boundary and at most one provider call; `options` streams the reply's text and can cancel the call. */
  step(id: string, options?: StepOptions): Promise<StepResult>;
  messages(id: string): Promise<StoredMessage[]>;
  compact(id: string): Promise<void>;
  switchModel(id: string, change: { provider?: string; model: string }): Promise<void>;
  move(id: string, location: string): Promise<void>;
  /**
   * What the next Safe Provider-Turn Boundary would admit (a new Baseline, a
   * Mid-Conversation System Message, or nothing), observed now and admitted never: read-only.
   */
  preview(id: string): Promise<BoundaryPreview>;
  /** The active Context Epoch of a session (its Baseline, snapshot and reason); none before the first boundary. */
  epoch(id: string): Promise<EpochRecord | undefined>;
  /** Active plugins. */
  plugins(): PluginInfo[];
  /** The configured MCP servers, their state and their exposed resources (none configured: empty). */
  mcpServers(): McpServerInfo[];
  /** Every distinct diagnostic so far, oldest first: plugins, instruction files and the watcher (`origin` says which). */
  readonly diagnostics: readonly Diagnostic[];
  /** The problems that still hold (a plugin that loaded again clears its earlier ones). */
  currentDiagnostics(): Diagnostic[];
  /** Plugin events and every new distinct diagnostic (instruction problems too). Returns an unsubscribe. */
  onPluginEvent(listener: (event: PluginEvent) => void): () => void;
  /**
   * What each Safe Provider-Turn Boundary did, once its reply is stored: the session, the
   * epoch and why it began, the Baseline when it started one, the admitted update, the
   * request sent, the reply's usage and timings. Returns an unsubscribe.
   */
  onBoundary(listener: (event: BoundaryEvent) => void): () => void;
  close(): Promise<void>;
}

/** How long `close()` waits for the steps in flight by default (ms). */
const defaultCloseTimeoutMs = 5_000;

/** Creates a host: loads plugins, opens the store, and serves sessions. */
export async function createHost(options: HostOptions): Promise<Host> {
  checkHostOptions(options);
  const scope = new Scope("host");
  try {
    return await assembleHost(options, scope);
  } catch (error) {
    // Nothing half-built stays open: the store, watchers and plugin scopes are released.
    await scope.close().catch(() => {});
    throw error;
  }
}

/**
 * The Host runs on the context engine: the engine's sources, store, epochs
 * and admission, with the Host's own history, provider calls and tools on top.
 */
async function assembleHost(options: HostOptions, scope: ScopeType): Promise<Host> {
  const parts = await startEngineParts(options, scope);
  const engine = engineOf(options, parts);
  const { sources, store } = parts;
  const runtime = new SessionRuntime({
    store,
    compose: (env) => sources.compose(env),
    providers: options.providers,
    ...(options.systemPrompt === undefined ? {} : { systemPrompt: options.systemPrompt }),
    tools: { read: readTool, ...options.tools },
    ...pick(options, ["toolDeadlineMs", "leaseMs", "limits", "clock"]),
    projectFiles: (sessionId, location) => sources.instructions.projectFiles(sessionId, location),
  });
  // Closed first (newest disposer first): steps in flight still have the sources and the store.
  void scope.add(() => runtime.close(options.closeTimeoutMs ?? defaultCloseTimeoutMs));

  return {
    createSession: (session) => runtime.createSession(session),
    prompt: (id, text) => runtime.prompt(id, text),
    step: (id, stepOptions) => runtime.step(id, stepOptions),
    messages: (id) => runtime.messages(id),
    compact: (id) => runtime.compact(id),
    switchModel: (id, change) => runtime.switchModel(id, change),
    move: (id, location) => runtime.move(id, location),
    preview: (id) => runtime.preview(id),
    epoch: (id) => store.activeEpoch(id),
    plugins: () => engine.plugins(),
    mcpServers: () => engine.mcpServers(),
    get diagnostics() {
      return engine.diagnostics;
    },
    currentDiagnostics: () => engine.currentDiagnostics(),
    onPluginEvent: (listener) => engine.onPluginEvent(listener),
    onBoundary: (listener) => runtime.onBoundary(listener),
    close: () => engine.close(),
  };
}

/** `createHost()` without options, or without providers, says what it needs; then the settings are checked. */
function checkHostOptions(options: unknown): void {
  const example = "such as createHost({ providers: { scripted: scriptedProvider() } })";
  if (typeof options !== "object" || options === null || Array.isArray(options))
    throw new SettingInvalid({
      setting: "(options)",
      reason: `createHost needs an options object with at least { providers }, ${example}; got ${describe(options)}`,
    });
  const { providers } = options as { providers?: unknown };
  if (typeof providers !== "object" || providers === null || Array.isArray(providers))
    throw new SettingInvalid({
      setting: "providers",
      reason: `createHost needs { providers }, the model APIs by name, ${example}; got ${describe(providers)}`,
    });
  checkSettings(options);
}
