// Owns the context engine (decisions 102, 104): the Context Sources of a host and a durable
// session per caller, for an agent loop that owns its history, its provider calls and its
// tools. The loop calls `boundary` right before each provider call; the engine answers
// with the epoch's Baseline and the Mid-Conversation System Messages admitted so far, each
// with its position in the caller's history. Its sessions live in a `SessionStore`, next to
// the Host's, and are decided and committed by the same code (`decideBoundary`,
// `boundaryCommit`, the store's one commit algorithm): the Host runs on this engine.

import { createHash } from "node:crypto";
import path from "node:path";
import { systemClock } from "../base/clock.ts";
import type { Diagnostic } from "../base/diagnostics.ts";
import { Listeners } from "../base/listeners.ts";
import { PerKeyQueue } from "../base/per-key-queue.ts";
import { Scope } from "../base/scope.ts";
import type { McpServerInfo } from "../mcp/info.ts";
import type { PluginEvent, PluginInfo } from "../plugins/events.ts";
import {
  type BoundaryDecision,
  type BoundaryPreview,
  boundaryCommit,
  decideBoundary,
  previewOf,
} from "../session/boundary-decision.ts";
import { readSessionIfAny, runBoundary, type SessionState } from "../session/boundary-loop.ts";
import { SessionBusy } from "../session/errors.ts";
import { SessionHistories, type SessionHistory } from "../session/history.ts";
import { type BoundaryEvent, checkLocation } from "../session/runtime.ts";
import { SqliteSessionStore, sessionsFile } from "../session/store/sqlite.ts";
import type { EpochReason, EpochRecord, SessionRecord, SessionStore, SessionWhere } from "../session/store/store.ts";
import { InitializationBlocked, type Snapshot } from "../system-context/index.ts";
import { type ContextSources, startContextSources } from "./context-sources.ts";
import { checkPluginFolders, contextSourceOptions, type HostOptions, reportDiagnostics } from "./host-options.ts";
import { checkSettings } from "./settings.ts";

/** A Mid-Conversation System Message admitted by the engine: it belongs after the caller's message number `position`. */
export interface AdmittedUpdate {
  /** How many of the caller's messages come before it. */
  readonly position: number;
  readonly text: string;
}

/**
 * Options of `createContextEngine`: a host's (`HostOptions`), less what belongs to the
 * caller's loop (providers, tools, the system prompt, tool deadlines, leases and size limits
 * of prompts and tool results). Sessions are kept in `store` (default the SQLite file
 * `<dataDir>/sessions.db`, the Host's), or any `SessionStore` such as PostgreSQL's.
 */
export interface ContextEngineOptions
  extends Omit<HostOptions, "providers" | "tools" | "systemPrompt" | "toolDeadlineMs" | "leaseMs" | "limits"> {}

/** What the loop tells the engine at a boundary. */
export interface EngineBoundaryInput {
  /** The folder the session works in (an absolute path of an existing folder). */
  readonly location: string;
  /** The provider and model the loop is about to call: a change starts a new Context Epoch. */
  readonly provider: string;
  readonly model: string;
  /** The caller's history, oldest first, as it will send it (opaque to the engine). */
  readonly messages: readonly unknown[];
  /** A stable digest of one message (default: SHA-256 of its JSON). */
  readonly digest?: (message: unknown) => string;
}

/** What the loop sends: the Baseline and the updates, each after the caller's message number `position`. */
export interface EngineBoundary {
  /** The Baseline System Context, verbatim for the epoch. */
  readonly baseline: string;
  /** The epoch's Mid-Conversation System Messages, oldest first. */
  readonly updates: readonly AdmittedUpdate[];
  readonly epoch: { readonly number: number; readonly reason: EpochReason };
}

/** The active Context Epoch of an engine session. */
export interface EngineEpoch {
  readonly number: number;
  readonly reason: EpochReason;
  readonly baseline: string;
  readonly snapshot: Snapshot;
}

/**
 * What the next boundary of a session would decide, observed now and admitted never.
 * @deprecated The same type as the Host's: use `BoundaryPreview`.
 */
export type EnginePreview = BoundaryPreview;

/** The context engine: Context Sources and durable sessions in a store, for any agent loop. */
export interface ContextEngine {
  /**
   * Runs a Safe Provider-Turn Boundary of `sessionId` right before a provider call: the
   * first call renders the Baseline; a later one admits changed sources after the caller's
   * newest message; a retry with the same messages admits nothing and answers the same; a
   * changed provider, model or location, or a history that no longer extends the one seen,
   * starts a new epoch. Throws `InitializationBlocked` when core sources block the first Baseline.
   */
  boundary(sessionId: string, input: EngineBoundaryInput): Promise<EngineBoundary>;
  /** What the next boundary would decide at `location` (default the session's), admitting nothing. */
  preview(sessionId: string, options?: { readonly location?: string }): Promise<BoundaryPreview>;
  /** The active Context Epoch of a session; none before its first boundary. */
  epoch(sessionId: string): Promise<EngineEpoch | undefined>;
  /** Active plugins. */
  plugins(): PluginInfo[];
  /** Every distinct diagnostic so far, oldest first. */
  readonly diagnostics: readonly Diagnostic[];
  /** The problems that still hold. */
  currentDiagnostics(): Diagnostic[];
  /** Plugin events and every new distinct diagnostic. Returns an unsubscribe. */
  onPluginEvent(listener: (event: PluginEvent) => void): () => void;
  /** The MCP servers and their resources, as the sources see them now. */
  mcpServers(): McpServerInfo[];
  /**
   * What each boundary did, once its store commit is done (a retry answered from the
   * store did nothing): the session, the epoch, the Baseline when it started one, the
   * admitted update and how long it took. Returns an unsubscribe.
   */
  onBoundary(listener: (event: BoundaryEvent) => void): () => void;
  close(): Promise<void>;
}

/** The digest of the caller's history, and of its first `seen` messages (the part the session saw). */
interface HistoryDigests {
  readonly all: string;
  readonly prefix: string | undefined;
  readonly seen: number | undefined;
}

/**
 * The digest of the caller's history and of its first `prefix` messages, in one pass: one
 * SHA-256 over each message's digest (`digest`) or, by default, its JSON (JSON values are
 * self-delimiting, so the concatenation names the list). `prefix` beyond the history: none.
 */
function historyDigests(
  messages: readonly unknown[],
  digest: ((message: unknown) => string) | undefined,
  prefix: number | undefined,
): HistoryDigests {
  const hash = createHash("sha256");
  let atPrefix: string | undefined = prefix === 0 ? hash.copy().digest("hex") : undefined;
  messages.forEach((message, index) => {
    if (digest === undefined) hash.update(JSON.stringify(message) ?? "null");
    else hash.update(digest(message)).update("\n");
    if (index + 1 === prefix) atPrefix = hash.copy().digest("hex");
  });
  return { all: hash.digest("hex"), prefix: atPrefix, seen: prefix };
}

/** The answer of a boundary: the epoch's Baseline and its updates, from the session's history as held. */
function answer(epoch: EpochRecord, history: SessionHistory): EngineBoundary {
  const updates: AdmittedUpdate[] = [];
  for (const message of history.all) {
    if (message.role === "system-update" && message.epoch === epoch.number) {
      updates.push({ position: message.position ?? 0, text: message.text });
    }
  }
  return { baseline: epoch.baseline, updates, epoch: { number: epoch.number, reason: epoch.reason } };
}

/** Why the caller's call starts a new epoch, if it does: `seenPrefix` is the digest of its first `session.seen.count` messages. */
function dueOf(session: SessionRecord, input: EngineBoundaryInput, seenPrefix: string | undefined): EpochReason | undefined {
  if (session.provider !== input.provider || session.model !== input.model) return "switch";
  if (session.location !== input.location) return "move";
  return seenPrefix === session.seen?.digest ? undefined : "compaction";
}

/** Whether the call is a retry of the one the session saw last: the same history, provider, model and location. */
function isRetry(session: SessionRecord, count: number, digest: string, where: SessionWhere): boolean {
  return (
    session.seen?.count === count &&
    session.seen.digest === digest &&
    session.provider === where.provider &&
    session.model === where.model &&
    session.location === where.location
  );
}

/** Refuses a Host session: its history is the Host's, so the engine cannot extend it. */
function checkEngineSession(id: string, state: SessionState | undefined): void {
  if (state === undefined || state.session.seen !== undefined || state.epoch === undefined) return;
  throw new SessionBusy({
    sessionId: id,
    reason: "it is a Host session (its history is the Host's): give the engine's sessions ids of their own",
  });
}

/** What an engine needs of its host: the sources, the store and the scope that closes them. @internal */
export interface EngineParts {
  readonly sources: ContextSources;
  readonly store: SessionStore;
  readonly scope: Scope;
}

/** Creates a context engine: starts the sources and opens the store. */
export async function createContextEngine(options: ContextEngineOptions = {}): Promise<ContextEngine> {
  checkSettings(options);
  const scope = new Scope("context engine");
  try {
    return engineOf(options, await startEngineParts(options, scope));
  } catch (error) {
    await scope.close().catch(() => {});
    throw error;
  }
}

/**
 * Opens the store and starts the Context Sources of a host or an engine, each closed with
 * `scope`; the diagnostics are reported as `onDiagnostic` says. @internal
 */
export async function startEngineParts(options: ContextEngineOptions, scope: Scope): Promise<EngineParts> {
  const cwd = process.cwd();
  checkPluginFolders(options.plugins ?? [], path.resolve(options.projectRoot ?? cwd));
  const dataDir = path.resolve(options.dataDir ?? path.join(cwd, ".context-host"));
  const store = options.store ?? new SqliteSessionStore(sessionsFile(dataDir), { dataDir });
  void scope.add(() => store.close());
  const sources = await startContextSources({ cwd, discoveryLog: store, ...contextSourceOptions(options) }, scope);
  reportDiagnostics(sources.diagnostics, options.onDiagnostic, cwd, scope);
  return { sources, store, scope };
}

/** The engine over started parts. @internal */
export function engineOf(options: ContextEngineOptions, parts: EngineParts): ContextEngine {
  const { sources, store, scope } = parts;
  const queue = new PerKeyQueue();
  const histories = new SessionHistories();
  const clock = options.clock ?? systemClock;
  const listeners = new Listeners<BoundaryEvent>();
  const announce = (id: string, decided: BoundaryDecision, epoch: EpochRecord, startedAt: number) => {
    const event: BoundaryEvent = {
      sessionId: id,
      epoch: { number: epoch.number, reason: epoch.reason },
      ...(decided.kind === "new-epoch" ? { baseline: epoch.baseline } : {}),
      ...(decided.kind === "update" ? { update: decided.text } : {}),
      timings: { boundaryMs: clock.now() - startedAt },
    };
    listeners.emit(event);
  };

  const boundary = (id: string, input: EngineBoundaryInput): Promise<EngineBoundary> => {
    const count = input.messages.length;
    const startedAt = clock.now();
    const where = { location: input.location, provider: input.provider, model: input.model };
    // One pass over the history gives its digest and that of the part the session saw; again only when that part changed.
    let digests: HistoryDigests | undefined;
    return runBoundary<EngineBoundary>({
      store,
      histories,
      sessionId: id,
      newSession: where,
      plan: async (state) => {
        checkEngineSession(id, state);
        const session = state?.session;
        const epoch = state?.epoch;
        if (digests === undefined || digests.seen !== session?.seen?.count) {
          digests = historyDigests(input.messages, input.digest, session?.seen?.count);
        }
        // A retry of the same call: the same answer, nothing admitted twice.
        if (state !== undefined && epoch !== undefined && isRetry(state.session, count, digests.all, where)) {
          return { kind: "answer", value: answer(epoch, state.history) };
        }
        // A location is checked when it is new to the session, as the Host checks it at createSession and move.
        if (session?.location !== input.location) checkLocation(input.location);
        const due = session === undefined || epoch === undefined ? undefined : dueOf(session, input, digests.prefix);
        const decided = await decideBoundary(await sources.compose({ location: input.location, sessionId: id }), epoch, due);
        if (decided.kind === "blocked") throw new InitializationBlocked({ keys: decided.keys });
        // A blocked transition keeps the session's old provider, model and location, so it stays due.
        return {
          kind: "commit",
          commit: boundaryCommit(decided, { seen: { count, digest: digests.all }, where }),
          committed: (committed, history) => {
            if (!listeners.isEmpty) announce(id, decided, committed.epoch, startedAt);
            return answer(committed.epoch, history);
          },
        };
      },
    });
  };

  const preview = async (id: string, location: string | undefined): Promise<BoundaryPreview> => {
    const state = await readSessionIfAny(store, histories, id);
    checkEngineSession(id, state);
    const session = state?.session;
    const epoch = state?.epoch;
    const at = location ?? session?.location;
    if (at === undefined) throw new TypeError(`preview of a new session ${id} needs a location`);
    const due = session !== undefined && epoch !== undefined && at !== session.location ? "move" : undefined;
    return previewOf(await decideBoundary(await sources.compose({ location: at, sessionId: id }), epoch, due), epoch);
  };

  return {
    boundary: (id, input) => queue.run(id, () => boundary(id, input)),
    preview: (id, previewOptions) => queue.run(id, () => preview(id, previewOptions?.location)),
    epoch: async (id) => {
      const epoch = await store.activeEpoch(id);
      return epoch === undefined
        ? undefined
        : { number: epoch.number, reason: epoch.reason, baseline: epoch.baseline, snapshot: epoch.snapshot };
    },
    plugins: () => sources.plugins.plugins(),
    get diagnostics() {
      return sources.diagnostics.history;
    },
    currentDiagnostics: () => sources.diagnostics.current(),
    onPluginEvent: (listener) => sources.subscribe(listener),
    mcpServers: () => sources.mcp?.servers() ?? [],
    onBoundary: (listener) => listeners.add(listener),
    close: () => scope.close(),
  };
}
