// Owns `InspectorSource`: the narrow, read-only view of a running dev host that the
// browser inspector shows. Every method returns plain JSON (what the page fetches as
// is); `subscribe` says that something changed, and the page reads again. A dev host's
// in-memory model is adapted to it, and `hostInspectorSource` builds one from a real host.

import type { McpServerInfo } from "../../../core/index.ts";
import type { CacheFigures } from "../cache-figures.ts";

/** A value now, or once a read finishes (an in-memory model answers at once, a store does not). */
export type Readable<T> = T | Promise<T>;

/** Why a Context Epoch began (as the store says: `initial`, `compaction`, `switch`, `move`, `replacement`). */
export type EpochReasonView = string;

/** One session, as the sessions list shows it. */
export interface SessionSummary {
  readonly id: string;
  readonly provider: string;
  readonly model: string;
  readonly location: string;
  /** The active Context Epoch's number, or `null` before the first boundary. */
  readonly epoch: number | null;
  readonly messageCount: number;
}

/** One Context Epoch of a session. */
export interface EpochView {
  readonly number: number;
  readonly reason: EpochReasonView;
  /** When the epoch began (ISO 8601), or `null` when nobody saw it begin (an epoch from before the inspector started). */
  readonly at: string | null;
  /** The Baseline System Context the epoch began with, exactly as sent; `null` when not known. */
  readonly baseline: string | null;
}

/** One durable message of the timeline. */
export interface MessageView {
  readonly seq: number;
  readonly epoch: number;
  /** `user`, `assistant`, `tool`, `system-update` or `summary`. */
  readonly role: string;
  readonly text: string;
  /** A Mid-Conversation System Message (role `system-update`): the page marks it and folds it. */
  readonly isSystemUpdate: boolean;
  /** Tool calls of an assistant message, by name; the tool's name for a tool result. */
  readonly toolNames?: readonly string[];
}

/** One row of the current Context Snapshot. */
export interface SnapshotRow {
  readonly key: string;
  /** The codec-encoded value, plain JSON. */
  readonly value: unknown;
  /** When this value was admitted (ISO 8601), or `null` when it was admitted before anyone watched. */
  readonly admittedAt: string | null;
}

/** One provider request and how much of it the prompt cache could reuse. */
export interface RequestView {
  /** Position among the session's requests, from 1. */
  readonly index: number;
  /** When it was sent (ISO 8601). */
  readonly at: string;
  readonly provider: string;
  readonly model: string;
  /** The epoch it was built in, or `null` when the request carries none. */
  readonly epoch: number | null;
  /** UTF-8 bytes of the request's system parts and messages. */
  readonly bytes: number;
  /** Of `bytes`, the prefix the previous request of the session already sent. */
  readonly reusedBytes: number;
  /** `bytes - reusedBytes`. */
  readonly newBytes: number;
  /** `first`, `extends`, `new-epoch` (with `reason`) or `break-within-epoch` (a defect). */
  readonly prefix: "first" | "extends" | "new-epoch" | "break-within-epoch";
  readonly reason?: string;
  /** What it read from and wrote to the provider's cache on its model, by the cache model (claude-* and gpt-* models). */
  readonly cache?: CacheFigures;
}

/** Everything the page shows of one session. */
export interface SessionView extends SessionSummary {
  /** Oldest first; the last is the active one. */
  readonly epochs: readonly EpochView[];
  /** The active epoch's Baseline System Context, or `null` before the first boundary. */
  readonly baseline: string | null;
  readonly messages: readonly MessageView[];
  /** The current snapshot, by key. */
  readonly snapshot: readonly SnapshotRow[];
  /** Oldest first. */
  readonly requests: readonly RequestView[];
}

/** A problem that still holds (a fixed one is gone). */
export interface ProblemView {
  /** The plugin's name, its file's base name before it is known, or `core`. */
  readonly plugin: string;
  readonly file: string;
  readonly line?: number;
  readonly column?: number;
  readonly key?: string;
  readonly phase: string;
  readonly message: string;
  readonly lineText?: string;
}

/** One generation a plugin reached, and when. */
export interface ReloadView {
  readonly generation: number;
  /** ISO 8601. */
  readonly at: string;
  /** How long loading it took, when the host measured it. */
  readonly ms?: number;
}

/** An active plugin. */
export interface PluginView {
  readonly name: string;
  /** The plugin's own file. */
  readonly file: string;
  /** Where it came from: its folder, or `package@version` (empty when unknown). */
  readonly origin: string;
  /** Every file its last load read (the plugin file first); at least the plugin file. */
  readonly files: readonly string[];
  readonly generation: number;
  /** The Context Source keys it registers. */
  readonly keys: readonly string[];
  /** The generations seen activated, oldest first. */
  readonly reloads: readonly ReloadView[];
  /** Its current problems. */
  readonly problems: readonly ProblemView[];
}

/** An MCP server, its state and its exposed resources' sources (as `host.mcpServers()` tells). */
export type McpServerView = McpServerInfo;

/** What changed; the page reads the affected views again. */
export type InspectorEvent =
  /** A Safe Provider-Turn Boundary or a reply of `session` was committed (or an epoch transition asked for). */
  | { readonly kind: "boundary"; readonly session: string }
  /** A plugin was activated in a new generation, or removed. */
  | { readonly kind: "plugin"; readonly plugin: string }
  /** The current problems changed. */
  | { readonly kind: "problem" }
  /** A session was created. */
  | { readonly kind: "session"; readonly session: string };

/** The read interface of the inspector. */
export interface InspectorSource {
  sessions(): Readable<readonly SessionSummary[]>;
  /** One session, or `undefined` when there is none by that id. */
  session(id: string): Readable<SessionView | undefined>;
  plugins(): Readable<readonly PluginView[]>;
  /** The MCP servers; a source without them lists none. */
  mcpServers?(): Readable<readonly McpServerView[]>;
  /** Current problems only, oldest first. */
  problems(): Readable<readonly ProblemView[]>;
  /** Calls `listener` after each change; returns the unsubscribe. */
  subscribe(listener: (event: InspectorEvent) => void): () => void;
}
