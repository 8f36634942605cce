// Owns `InspectorSource`: the narrow, read-only view of a running dev host that the
// browser inspector shows. Every method returns plain JSON (what the page fetches as
// is); `subscribe` says that something changed, and the page reads again. A session is
// the one view of `session-view.ts`, which the dev host's model keeps and
// `hostInspectorSource` builds from a real host.

import type { McpServerInfo } from "../../../core/index.ts";
import type { SessionSummary, SessionView } from "../session-view.ts";

export type {
  EpochReasonView,
  EpochView,
  MessageView,
  RequestView,
  SessionSummary,
  SessionView,
  SnapshotRow,
} from "../session-view.ts";

/** A value now, or once a read finishes (an in-memory model answers at once, a store does not). */
export type Readable<T> = T | Promise<T>;

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
