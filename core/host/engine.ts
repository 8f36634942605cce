// Owns the context engine (decision 102): the Context Sources of a host and a durable
// ledger per session, for an agent loop that owns its history, its provider calls and its
// tools. The loop calls `boundary` right before each provider call; the engine answers
// with the epoch's Baseline and the Mid-Conversation System Messages admitted so far, each
// with its position in the caller's history. Epochs and admission are decided by the same
// `decideBoundary` as the Host's sessions.

import { createHash } from "node:crypto";
import path from "node:path";
import { systemClock } from "../base/clock.ts";
import type { Diagnostic } from "../base/diagnostics.ts";
import { PerKeyQueue } from "../base/per-key-queue.ts";
import { Scope } from "../base/scope.ts";
import type { McpServerInfo } from "../mcp/info.ts";
import type { PluginEvent, PluginInfo } from "../plugins/events.ts";
import { type BoundaryDecision, decideBoundary } from "../session/boundary-decision.ts";
import { BoundaryContended } from "../session/errors.ts";
import { type BoundaryEvent, checkLocation } from "../session/runtime.ts";
import {
  type AdmittedUpdate,
  type EngineLedger,
  type LedgerCommit,
  type LedgerRecord,
  ledgerFile,
  SqliteEngineLedger,
} from "../session/store/engine-ledger.ts";
import type { EpochReason } from "../session/store/store.ts";
import { RevisionConflict } from "../session/store/store.ts";
import { InitializationBlocked, type Snapshot } from "../system-context/index.ts";
import { startContextSources } from "./context-sources.ts";
import { checkPluginFolders, contextSourceOptions, type HostOptions, reportDiagnostics } from "./host.ts";
import { checkSettings } from "./settings.ts";

export type { AdmittedUpdate, EngineLedger } from "../session/store/engine-ledger.ts";

/**
 * Options of `createContextEngine`: a host's (`HostOptions`), less what belongs to the
 * caller's loop (providers, tools, the system prompt, tool deadlines, leases and size limits
 * of prompts and tool results) and the session store; the engine keeps a ledger instead.
 */
export interface ContextEngineOptions
  extends Omit<HostOptions, "providers" | "tools" | "systemPrompt" | "store" | "toolDeadlineMs" | "leaseMs" | "limits"> {
  /** A ledger other than the default SQLite file `<dataDir>/engine.db`. */
  readonly ledger?: EngineLedger;
}

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

/** What the next boundary of a session would decide, observed now and admitted never. */
export type EnginePreview =
  | { readonly kind: "new-epoch"; readonly reason: EpochReason; readonly baseline: string; readonly snapshot: Snapshot }
  | { readonly kind: "update"; readonly text: string; readonly snapshot: Snapshot }
  | { readonly kind: "unchanged"; readonly snapshot: Snapshot }
  | { readonly kind: "blocked"; readonly keys: readonly string[] };

/** The context engine: Context Sources and a durable ledger, for any agent loop. */
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
  preview(sessionId: string, options?: { readonly location?: string }): Promise<EnginePreview>;
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
   * What each boundary did, once its ledger commit is done (a retry answered from the
   * ledger did nothing): the session, the epoch, the Baseline when it started one, the
   * admitted update and how long it took. Returns an unsubscribe.
   */
  onBoundary(listener: (event: BoundaryEvent) => void): () => void;
  close(): Promise<void>;
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
): { all: string; prefix: string | undefined } {
  const hash = createHash("sha256");
  let atPrefix: string | undefined = prefix === 0 ? hash.copy().digest("hex") : undefined;
  messages.forEach((message, index) => {
    hash.update(digest === undefined ? (JSON.stringify(message) ?? "null") : `${digest(message)}\n`);
    if (index + 1 === prefix) atPrefix = hash.copy().digest("hex");
  });
  return { all: hash.digest("hex"), prefix: atPrefix };
}

const maxReplans = 8;

function answer(record: LedgerRecord): EngineBoundary {
  return {
    baseline: record.epoch.baseline,
    updates: record.updates,
    epoch: { number: record.epoch.number, reason: record.epoch.reason },
  };
}

/** Why the caller's call starts a new epoch, if it does: `seenPrefix` is the digest of its first `record.seenCount` messages. */
function dueOf(record: LedgerRecord, input: EngineBoundaryInput, seenPrefix: string | undefined): EpochReason | undefined {
  if (record.provider !== input.provider || record.model !== input.model) return "switch";
  if (record.location !== input.location) return "move";
  return seenPrefix === record.seenDigest ? undefined : "compaction";
}

/** Creates a context engine: starts the sources and opens the ledger. */
export async function createContextEngine(options: ContextEngineOptions = {}): Promise<ContextEngine> {
  checkSettings(options);
  const scope = new Scope("context engine");
  try {
    const cwd = process.cwd();
    checkPluginFolders(options.plugins ?? [], path.resolve(options.projectRoot ?? cwd));
    const ledger =
      options.ledger ?? new SqliteEngineLedger(ledgerFile(path.resolve(options.dataDir ?? path.join(cwd, ".context-host"))));
    void scope.add(() => ledger.close());
    const sources = await startContextSources({ cwd, ...contextSourceOptions(options) }, scope);
    reportDiagnostics(sources.diagnostics, options.onDiagnostic, cwd, scope);
    const queue = new PerKeyQueue();
    const clock = options.clock ?? systemClock;
    const listeners = new Set<(event: BoundaryEvent) => void>();
    const announce = (id: string, decided: BoundaryDecision, record: LedgerRecord, startedAt: number) => {
      const event: BoundaryEvent = {
        sessionId: id,
        epoch: { number: record.epoch.number, reason: record.epoch.reason },
        ...(decided.kind === "new-epoch" ? { baseline: record.epoch.baseline } : {}),
        ...(decided.kind === "update" ? { update: decided.text } : {}),
        timings: { boundaryMs: clock.now() - startedAt },
      };
      for (const listener of listeners) {
        try {
          listener(event);
        } catch {
          // A listener's fault is its own: the boundary is committed.
        }
      }
    };

    const boundary = async (id: string, input: EngineBoundaryInput): Promise<EngineBoundary> => {
      const count = input.messages.length;
      const startedAt = clock.now();
      let digests: { all: string; prefix: string | undefined; seen: number | undefined } | undefined;
      for (let round = 0; round < maxReplans; round++) {
        const record = await ledger.read(id);
        // One pass over the history gives its digest and that of the part the ledger saw.
        if (digests === undefined || digests.seen !== record?.seenCount) {
          digests = { ...historyDigests(input.messages, input.digest, record?.seenCount), seen: record?.seenCount };
        }
        const seenDigest = digests.all;
        const same =
          record !== undefined &&
          record.seenCount === count &&
          record.seenDigest === seenDigest &&
          record.provider === input.provider &&
          record.model === input.model &&
          record.location === input.location;
        // A retry of the same call: the same answer, nothing admitted twice.
        if (same) return answer(record);
        // A location is checked when it is new to the session, as the Host checks it at createSession and move.
        if (record?.location !== input.location) checkLocation(input.location);
        const due = record === undefined ? undefined : dueOf(record, input, digests.prefix);
        const context = await sources.compose({ location: input.location, sessionId: id });
        const decided = await decideBoundary(context, record?.epoch, due);
        if (decided.kind === "blocked") throw new InitializationBlocked({ keys: decided.keys });
        try {
          const committed = await ledger.commit(id, record?.revision, commitOf(decided, record, input, due, count, seenDigest));
          if (listeners.size > 0) announce(id, decided, committed, startedAt);
          return answer(committed);
        } catch (error) {
          if (error instanceof RevisionConflict) continue; // another process committed first: decide again
          throw error;
        }
      }
      throw new BoundaryContended({ sessionId: id, rounds: maxReplans });
    };

    return {
      boundary: (id, input) => queue.run(id, () => boundary(id, input)),
      preview: (id, previewOptions) =>
        queue.run(id, async () => {
          const record = await ledger.read(id);
          const location = previewOptions?.location ?? record?.location;
          if (location === undefined) throw new TypeError(`preview of a new session ${id} needs a location`);
          const due = record !== undefined && location !== record.location ? "move" : undefined;
          const decided = await decideBoundary(await sources.compose({ location, sessionId: id }), record?.epoch, due);
          switch (decided.kind) {
            case "new-epoch":
              return { kind: "new-epoch", reason: decided.reason, ...decided.generation };
            case "update":
              return { kind: "update", text: decided.text, snapshot: decided.snapshot };
            case "unchanged":
              return { kind: "unchanged", snapshot: record?.epoch.snapshot ?? {} };
            case "blocked":
              return decided;
          }
        }),
      epoch: async (id) => (await ledger.read(id))?.epoch,
      plugins: () => sources.plugins.plugins(),
      get diagnostics() {
        return sources.diagnostics.history;
      },
      currentDiagnostics: () => sources.diagnostics.current(),
      onPluginEvent: (listener) => sources.subscribe(listener),
      mcpServers: () => sources.mcp?.servers() ?? [],
      onBoundary(listener) {
        listeners.add(listener);
        return () => {
          listeners.delete(listener);
        };
      },
      close: () => scope.close(),
    };
  } catch (error) {
    await scope.close().catch(() => {});
    throw error;
  }
}

/** The ledger commit of a decision: a blocked transition keeps the session's old provider, model and location, so it stays due. */
function commitOf(
  decided: Exclude<BoundaryDecision, { kind: "blocked" }>,
  record: LedgerRecord | undefined,
  input: EngineBoundaryInput,
  due: EpochReason | undefined,
  seenCount: number,
  seenDigest: string,
): LedgerCommit {
  const keepOld = decided.kind !== "new-epoch" && due !== undefined && record !== undefined;
  const where = keepOld
    ? { provider: record.provider, model: record.model, location: record.location }
    : { provider: input.provider, model: input.model, location: input.location };
  const seen = { ...where, seenCount, seenDigest };
  switch (decided.kind) {
    case "new-epoch":
      return { ...seen, newEpoch: { reason: decided.reason, ...decided.generation } };
    case "update":
      return { ...seen, update: { position: seenCount, text: decided.text, snapshot: decided.snapshot } };
    case "unchanged":
      return seen;
  }
}
