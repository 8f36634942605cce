// A TypeScript consumer using every entry point, as a host, a plugin author, a user of
// the pure core, an adapter author and a store author would. Type-checked, never run.

// @ts-expect-error internal: the plugin set is not part of the package's API
import type { PluginSet } from "context-host";
import {
  createHost,
  formatDiagnostic,
  type Host,
  type HostOptions,
  type PluginEvent,
  type PluginInfo,
  ProviderNotFound,
  type ProviderRequest,
  SettingInvalid,
  scriptedProvider,
} from "context-host";
// @ts-expect-error internal modules are not reachable through the package
import type { Host as InternalHost } from "context-host/dist/core/host/host.js";
import { definePlugin, SystemContext as LoaderValues, type PluginApi } from "context-host/plugin";
import { type AnthropicMessagesBody, anthropicDefaults, lowerAnthropic } from "context-host/providers";
import { type SessionStore, SqliteSessionStore, type StoredMessage } from "context-host/store";
import * as SystemContext from "context-host/system-context";
import Type from "typebox";

export type Unreachable = [PluginSet, InternalHost];

// The conformance kit's entry is reserved: it resolves and exports nothing yet.
export type * as Conformance from "context-host/conformance";

/** A core source through the pure core: typed, composed, initialized. */
export async function baselineOf(branch: string | undefined): Promise<string> {
  const gitBranch: SystemContext.SystemContext = SystemContext.make({
    key: "git/branch",
    schema: Type.String(),
    load: () => branch ?? SystemContext.absent,
    baseline: (name) => `Git branch: ${name}`,
    update: (_previous, name) => `The git branch is now ${name}.`,
  });
  const generation: SystemContext.Generation = await SystemContext.initialize(SystemContext.combine([gitBranch]));
  const next = await SystemContext.reconcile(SystemContext.combine([gitBranch]), generation.snapshot);
  return next.kind === "updated" ? next.text : generation.baseline;
}

/** A plugin whose setup is typed by the plugin entry. */
export const counter = definePlugin({
  name: "counter",
  config: Type.Object({ start: Type.Integer() }),
  setup(api: PluginApi<{ start: number }>, config) {
    api.source({
      key: "counter/value",
      schema: Type.Integer(),
      load: () => (config.start < 0 ? LoaderValues.unavailable : config.start),
      baseline: (value) => `The counter is ${value.toFixed(0)}.`,
      update: (_previous, value) => `The counter is now ${value}.`,
    });
  },
});

/** A host session through the host entry. */
export async function converse(options: Omit<HostOptions, "providers">): Promise<StoredMessage[]> {
  const host: Host = await createHost({ ...options, providers: { scripted: scriptedProvider([{ text: "hi" }]) } });
  const seen: string[] = [];
  host.onPluginEvent((event: PluginEvent) => {
    if (event.kind === "diagnostic") seen.push(formatDiagnostic(event.diagnostic));
  });
  const active: PluginInfo[] = host.plugins();
  const id = await host.createSession({ location: ".", provider: "scripted", model: active[0]?.name ?? "m" });
  await host.prompt(id, "hello");
  const step = await host.step(id);
  if (step.kind === "blocked") throw new Error(step.keys.join(", "));
  const messages = await host.messages(id);
  await host.close();
  return messages;
}

/** The errors a host meets are classes it can tell apart. */
export function isMisconfiguration(error: unknown): boolean {
  return error instanceof SettingInvalid || error instanceof ProviderNotFound;
}

/** Lowering through the providers entry. */
export function lowered(request: ProviderRequest): AnthropicMessagesBody {
  return lowerAnthropic(request, anthropicDefaults);
}

/** A store through the store entry. */
export function openStore(file: string): SessionStore {
  return new SqliteSessionStore(file);
}
