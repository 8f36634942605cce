// Owns the session runtime: durable admission of input, and the Safe Provider-Turn
// Boundary. One `step` runs one boundary (initialize or reconcile, promote input,
// admit one combined Mid-Conversation System Message) and at most one provider call.
// Nothing here runs unless asked: no timers, no watchers, no waking idle sessions.

import { randomUUID } from "node:crypto";
import { statSync } from "node:fs";
import path from "node:path";
import { type Clock, systemClock } from "../base/clock.ts";
import { withinDeadline } from "../base/deadline.ts";
import { messageOf } from "../base/errors.ts";
import { Listeners } from "../base/listeners.ts";
import { PerKeyQueue } from "../base/per-key-queue.ts";
import type { SourceEnv } from "../registry/registry.ts";
import type { ProjectFiles } from "../sources/instructions/service.ts";
import type { SnapshotEntry, SystemContext } from "../system-context/index.ts";
import { type BoundaryPreview, boundaryCommit, decideBoundary, previewOf } from "./boundary-decision.ts";
import { type BoundaryRound, readSession, runBoundary } from "./boundary-loop.ts";
import {
  LocationInvalid,
  ProjectFilesUnavailable,
  PromptInvalid,
  ProviderNotFound,
  SessionBusy,
  SizeLimitExceeded,
  StepAborted,
} from "./errors.ts";
import { SessionHistories, type SessionHistory } from "./history.ts";
import { isHolderGone, newLeaseHolder, parseHolder, probeProcess } from "./lease-holder.ts";
import { requestOf } from "./projection.ts";
import type { Provider, ProviderReply, ProviderRequest, SendOptions, TokenUsage, ToolCall } from "./provider.ts";
import {
  bytesOf,
  checkReply,
  checkSize,
  checkWellFormed,
  defaultLimits,
  loneSurrogateAt,
  type SessionLimits,
} from "./reply-check.ts";
import { StepsInFlight } from "./steps-in-flight.ts";
import { entryWrites } from "./store/epoch-rows.ts";
import {
  type BoundaryCommit,
  type EpochReason,
  type EpochRecord,
  type InFlightLease,
  type PendingPrompt,
  RevisionConflict,
  readBoundaryOf,
  type SessionRecord,
  type SessionStore,
  type StoredMessage,
} from "./store/store.ts";

export { ProviderNotFound } from "./errors.ts";

/** What a tool is told about the call: the session, where it runs, and project file access. */
export interface ToolContext {
  readonly sessionId: string;
  readonly location: string;
  /**
   * Reads project files for the tool. Use it instead of `fs`: it refuses files outside the
   * project root, and reading a file makes the instruction files of the folders on the way
   * effective for the session, admitted at the next Safe Provider-Turn Boundary.
   */
  readonly files: ProjectFiles;
}

/** A host tool: takes the model's input, returns the result text. */
export type Tool = (input: unknown, context: ToolContext) => string | Promise<string>;

/** A host tool with its own deadline. */
export interface ToolSpec {
  readonly run: Tool;
  /** Milliseconds the tool may take; then its call gets an error result (default: the host's `toolDeadlineMs`). */
  readonly deadlineMs?: number;
}

/** What a caller of `step` may ask for besides the result. */
export interface StepOptions {
  /**
   * Called once the boundary is admitted (prompts promoted, any Mid-Conversation System
   * Message or new Baseline stored) and before the provider is called, with the request; awaited.
   */
  readonly onRequest?: (request: ProviderRequest) => void | Promise<void>;
  /** The reply's text as it arrives, piece by piece; a retried attempt (`attempt` from 1) starts over. */
  readonly onText?: (text: string, attempt: number) => void;
  /** Aborting cancels the provider call: `step` rejects with `StepAborted`, nothing of the reply is stored. */
  readonly signal?: AbortSignal;
}

/** The outcome of one `step`. */
export type StepResult =
  | { readonly kind: "replied"; readonly request: ProviderRequest; readonly reply: ProviderReply }
  | { readonly kind: "blocked"; readonly keys: readonly string[] }
  | { readonly kind: "idle" }
  /**
   * Another runtime (another process on the same database) holds the in-flight lease of
   * this session's admitted boundary: it calls the provider; nothing was sent from here.
   * Step again later; its reply will be in history, or its lease expires at `until`.
   */
  | { readonly kind: "in-flight"; readonly until: number };

export interface RuntimeOptions {
  readonly store: SessionStore;
  /** Composes the System Context for a boundary of a session in `env.location`. */
  compose(env: SourceEnv): Promise<SystemContext>;
  readonly providers: Readonly<Record<string, Provider>>;
  readonly systemPrompt?: string;
  readonly tools?: Readonly<Record<string, Tool | ToolSpec>>;
  /** Default deadline of a tool call (default 60 s). */
  readonly toolDeadlineMs?: number;
  /** How long the in-flight lease of a provider call lasts unless renewed (default 30 s; renewed while the holder lives). */
  readonly leaseMs?: number;
  /** Size limits (UTF-8 bytes) of prompts, tool results and source values. */
  readonly limits?: SessionLimits;
  readonly clock?: Clock;
  /** Project file access for a tool call (the instruction service's). */
  projectFiles?(sessionId: string, location: string): ProjectFiles;
  /** The user-side instruction that asks the provider for a compaction summary. */
  readonly compactionInstruction?: string;
}

const defaultCompactionInstruction =
  "Summarize the conversation so far for your own later use: the goal, decisions made, the current state of the work, and open questions. Be complete but brief.";

/** A boundary admitted and its request built. */
interface Ready {
  readonly kind: "ready";
  readonly request: ProviderRequest;
  readonly revision: number;
  readonly location: string;
  /** The last stored message when the request was built (0: none). */
  readonly lastSeq: number;
  readonly history: SessionHistory;
  /** What this boundary admitted (nothing for a resent request), and when it began (the clock's ms). */
  readonly admitted: { readonly baseline?: string; readonly update?: string };
  readonly startedAt: number;
}

/**
 * What one Safe Provider-Turn Boundary did, told to `onBoundary` listeners once it is
 * committed: the Host's after the reply is stored, the engine's after its store commit.
 */
export interface BoundaryEvent {
  readonly sessionId: string;
  /** The epoch the boundary belongs to, and why it began. */
  readonly epoch: { readonly number: number; readonly reason: EpochReason };
  /** The Baseline, when this boundary started the epoch. */
  readonly baseline?: string;
  /** The Mid-Conversation System Message this boundary admitted, if any. */
  readonly update?: string;
  /** The Host: the request sent (the engine sends none). */
  readonly request?: ProviderRequest;
  /** The Host: the reply's token usage, when the provider reported it. */
  readonly usage?: TokenUsage;
  /** Milliseconds: the boundary (observe, decide, commit), and the provider call with its tools (the Host). */
  readonly timings: { readonly boundaryMs: number; readonly providerMs?: number };
}

const defaultToolDeadlineMs = 60_000;
const defaultLeaseMs = 30_000;

/** Checks a session location: an absolute path of an existing folder. Throws `LocationInvalid`. */
export function checkLocation(location: unknown): string {
  if (typeof location !== "string" || location === "") {
    throw new LocationInvalid({ location: String(location), reason: "a location must be a folder's absolute path" });
  }
  if (!path.isAbsolute(location)) {
    throw new LocationInvalid({
      location,
      reason: `is relative; give an absolute path (it would have resolved to ${path.resolve(location)})`,
    });
  }
  let stats: ReturnType<typeof statSync>;
  try {
    stats = statSync(location);
  } catch (error) {
    throw new LocationInvalid({ location, reason: `cannot be used: ${messageOf(error)}` });
  }
  if (!stats.isDirectory()) throw new LocationInvalid({ location, reason: "is not a folder" });
  return location;
}

function isIdle(last: StoredMessage | undefined, pending: readonly PendingPrompt[]): boolean {
  if (pending.length > 0) return false;
  return last === undefined || last.role !== "tool";
}

export class SessionRuntime {
  readonly #options: RuntimeOptions;
  readonly #histories = new SessionHistories();
  readonly #queue = new PerKeyQueue();
  /** This runtime's name in in-flight leases: its machine, process and a fresh id. */
  readonly #holder = newLeaseHolder();
  readonly #limits: Required<SessionLimits>;
  readonly #clock: Clock;
  /** The steps and compactions running, so `close` can let them end or abandon them. */
  readonly #inFlight = new StepsInFlight();

  constructor(options: RuntimeOptions) {
    this.#options = options;
    this.#limits = { ...defaultLimits, ...options.limits };
    this.#clock = options.clock ?? systemClock;
  }

  readonly #boundaryListeners = new Listeners<BoundaryEvent>();

  /** Calls `listener` with each boundary once its reply is stored; returns the unsubscribe. A throwing listener is ignored. */
  onBoundary(listener: (event: BoundaryEvent) => void): () => void {
    return this.#boundaryListeners.add(listener);
  }

  #announce(event: BoundaryEvent): void {
    this.#boundaryListeners.emit(event);
  }

  /** Creates a session and returns its id. Its first boundary renders the Baseline. */
  async createSession(session: { location: string; provider: string; model: string }): Promise<string> {
    this.#provider(session.provider);
    checkLocation(session.location);
    const id = randomUUID();
    await this.#options.store.createSession({ id, ...session });
    return id;
  }

  /** Admits input durably. It is promoted into history at the next boundary; nothing is sent now. */
  async prompt(id: string, text: string): Promise<void> {
    if (typeof text !== "string") {
      const value: unknown = text;
      const got =
        value === null || value === undefined
          ? String(value)
          : Array.isArray(value)
            ? "an array"
            : typeof value === "object" || typeof value === "function"
              ? `a${typeof value === "object" ? "n object" : " function"}`
              : `${typeof value} ${String(value)}`;
      throw new PromptInvalid({ sessionId: id, reason: `the prompt must be a string; got ${got}` });
    }
    if (text.trim() === "") {
      throw new PromptInvalid({ sessionId: id, reason: "the text is empty; a prompt must say something" });
    }
    checkWellFormed(text, id, "prompt");
    checkSize(text, this.#limits.promptBytes, { sessionId: id, what: "prompt", limit: "promptBytes" });
    await this.#options.store.addPrompt(id, text);
  }

  /** Durable history, oldest first, including Mid-Conversation System Messages of every epoch. */
  messages(id: string): Promise<StoredMessage[]> {
    return this.#options.store.messages(id);
  }

  /** A new provider and/or model: the next boundary starts a new Context Epoch; history stays. */
  async switchModel(id: string, change: { provider?: string; model: string }): Promise<void> {
    if (change.provider !== undefined) this.#provider(change.provider);
    await this.#options.store.updateSession(id, { ...change, epochDue: "switch" });
  }

  /** A new location: the next boundary starts a new epoch, and location-scoped sources re-resolve there. */
  async move(id: string, location: string): Promise<void> {
    checkLocation(location);
    await this.#options.store.updateSession(id, { location, epochDue: "move" });
  }

  /** Summarises projected history through the provider; the next boundary starts a new epoch. */
  compact(id: string): Promise<void> {
    return this.#inFlight.run(id, (abandoned) =>
      this.#queue.run(id, () => {
        abandoned.throwIfAborted();
        return this.#compact(id, abandoned);
      }),
    );
  }

  async #compact(id: string, abandoned: AbortSignal): Promise<void> {
    const { store } = this.#options;
    const session = await store.session(id);
    if (session.isAwaitingReply)
      throw new SessionBusy({ sessionId: id, reason: "a provider turn is pending; step before compacting" });
    const epoch = await store.activeEpoch(id);
    if (epoch === undefined) return; // nothing was ever sent: nothing to summarise
    const history = await this.#histories.of(id, store);
    const request = requestOf(session, this.#options.systemPrompt, epoch, history.projected(epoch));
    const instruction = this.#options.compactionInstruction ?? defaultCompactionInstruction;
    const reply = checkReply(
      await this.#provider(session.provider).send(
        {
          ...request,
          messages: [...request.messages, { role: "user", text: instruction }],
        },
        { signal: abandoned },
      ),
      { sessionId: id, provider: session.provider },
    );
    await store.commitSummary(id, session.revision, reply.text);
  }

  /**
   * What the next boundary would admit if it ran now: the sources are observed once and
   * the plan is made as `step` makes it, but nothing is committed, promoted or sent, so
   * the next real boundary decides afresh. Runs in the session's queue, after any step.
   */
  preview(id: string): Promise<BoundaryPreview> {
    return this.#queue.run(id, async () => {
      const { session, epoch } = await readSession(this.#options.store, this.#histories, id);
      const context = await this.#options.compose({ location: session.location, sessionId: id });
      const due = this.#epochDue(session, epoch);
      return previewOf(await decideBoundary(context, epoch, due), epoch);
    });
  }

  /**
   * Runs one Safe Provider-Turn Boundary and at most one provider call. Steps of one
   * session run one at a time in this runtime; across runtimes the in-flight lease lets
   * exactly one call the provider for a boundary.
   */
  step(id: string, options: StepOptions = {}): Promise<StepResult> {
    return this.#inFlight.run(id, (abandoned) =>
      this.#queue.run(id, () => {
        abandoned.throwIfAborted();
        const signal = options.signal === undefined ? abandoned : AbortSignal.any([options.signal, abandoned]);
        return this.#step(id, { ...options, signal });
      }),
    );
  }

  /**
   * Takes no new step (`HostClosed`), lets the steps in flight end within `timeoutMs`, then
   * aborts the provider calls of the rest and releases their leases, so another process
   * can step their sessions at once.
   */
  async close(timeoutMs: number): Promise<void> {
    const abandoned = await this.#inFlight.close(timeoutMs);
    // No renewal may take a released lease again.
    this.#leased.clear();
    clearInterval(this.#leaseTicker);
    this.#leaseTicker = undefined;
    for (const id of abandoned) await this.#options.store.releaseLease(id, this.#holder).catch(() => {});
  }

  async #step(id: string, options: StepOptions): Promise<StepResult> {
    const prepared = await this.#boundary(id);
    if (prepared.kind !== "ready") return prepared;
    const { request, location, lastSeq, history } = prepared;
    const { store } = this.#options;
    let sentAt = this.#clock.now();
    this.#renewLease(id);
    try {
      let reply: ProviderReply;
      let stored: ProviderReply;
      try {
        await options.onRequest?.(request);
        sentAt = this.#clock.now();
        reply = await this.#provider(request.provider).send(request, sendOptions(options));
        // Checked before anything is written or any tool runs: nothing of a bad reply is admitted.
        stored = checkReply(reply, { sessionId: id, provider: request.provider });
      } catch (error) {
        await store.releaseLease(id, this.#holder).catch(() => {});
        if (options.signal?.aborted === true) throw new StepAborted({ sessionId: id, cause: error });
        throw error;
      }
      const calls = stored.toolCalls ?? [];
      // Never run a tool for a call that cannot be committed: another runtime may have settled this boundary.
      if (calls.length > 0) {
        const winner = await this.#settledElsewhere(id, lastSeq);
        if (winner !== undefined) return { kind: "replied", request, reply: winner };
      }
      const toolResults = calls.length === 0 ? [] : await this.#runTools(id, location, calls);
      for (let revision = prepared.revision; ; ) {
        try {
          const committed = await store.commitReply(id, revision, stored, toolResults);
          history.append(committed.appended);
          if (!this.#boundaryListeners.isEmpty) this.#announceStep(id, prepared, stored, sentAt);
          return { kind: "replied", request, reply };
        } catch (error) {
          if (!(error instanceof RevisionConflict)) throw error;
          // Another runtime persisted the reply to this same request first: hand back that one, which is in history.
          const winner = await this.#settledElsewhere(id, lastSeq);
          if (winner !== undefined) return { kind: "replied", request, reply: winner };
          // Only a transition (move, switch) advanced the revision in flight: this reply is still awaited.
          revision = (await store.session(id)).revision;
        }
      }
    } finally {
      this.#leased.delete(id);
    }
  }

  #announceStep(id: string, prepared: Ready, reply: ProviderReply, sentAt: number): void {
    const { request, admitted, startedAt } = prepared;
    const epoch = request.epoch as { number: number; reason: EpochReason };
    this.#announce({
      sessionId: id,
      epoch: { number: epoch.number, reason: epoch.reason },
      ...(admitted.baseline === undefined ? {} : { baseline: admitted.baseline }),
      ...(admitted.update === undefined ? {} : { update: admitted.update }),
      request,
      ...(reply.usage === undefined ? {} : { usage: reply.usage }),
      timings: { boundaryMs: sentAt - startedAt, providerMs: this.#clock.now() - sentAt },
    });
  }

  /** The reply another runtime committed for the request built at `lastSeq`, if it did. */
  async #settledElsewhere(id: string, lastSeq: number): Promise<ProviderReply | undefined> {
    // One read (the session and what was appended since), as a boundary reads.
    const { session, appended } = await readBoundaryOf(this.#options.store, id, lastSeq);
    const answer = appended.find((message) => message.role === "assistant");
    if (answer !== undefined) {
      return answer.toolCalls === undefined ? { text: answer.text } : { text: answer.text, toolCalls: answer.toolCalls };
    }
    if (!session.isAwaitingReply) return { text: "" };
    return undefined;
  }

  /**
   * The sessions whose in-flight lease this runtime holds while their provider call and
   * tools run, kept alive by one ticker for all of them (every third of the lease's
   * length, so each is renewed well before it expires); the ticker stops once a tick
   * finds none, so an idle runtime keeps no timer.
   */
  readonly #leased = new Set<string>();
  #leaseTicker: ReturnType<typeof setInterval> | undefined;

  /** Keeps the lease of `id` renewed until `#leased` no longer has it (the step's end). */
  #renewLease(id: string): void {
    this.#leased.add(id);
    if (this.#leaseTicker === undefined) {
      const leaseMs = this.#leaseMs;
      this.#leaseTicker = setInterval(
        () => {
          if (this.#leased.size === 0) {
            clearInterval(this.#leaseTicker);
            this.#leaseTicker = undefined;
            return;
          }
          const now = this.#clock.now();
          for (const leased of this.#leased) {
            const lease = { holder: this.#holder, expiresAt: now + leaseMs };
            void this.#options.store.claimLease(leased, lease, now).catch(() => {});
          }
        },
        Math.max(10, Math.floor(leaseMs / 3)),
      );
      this.#leaseTicker.unref();
    }
  }

  /**
   * Takes over the lease `held` if its holder ran on this machine and no longer runs:
   * claimed as at the moment that lease expires, so the store's own expiry
   * rule lets the claim through, and a lease another runtime took since (expiring later) holds.
   */
  async #takeOverFromGoneHolder(id: string, lease: InFlightLease, held: InFlightLease): Promise<boolean> {
    const machine = parseHolder(this.#holder)?.machine;
    if (!isHolderGone(held.holder, probeProcess, machine)) return false;
    return this.#options.store.claimLease(id, lease, held.expiresAt);
  }

  get #leaseMs(): number {
    return this.#options.leaseMs ?? defaultLeaseMs;
  }

  /**
   * Runs the boundary of a step (`runBoundary`): resends an admitted boundary whose reply
   * is not stored, answers an idle session, or decides and commits a new boundary with
   * the in-flight lease of the provider call that follows.
   */
  #boundary(id: string): Promise<Ready | Exclude<StepResult, { kind: "replied" }>> {
    const startedAt = this.#clock.now();
    return runBoundary<Ready | Exclude<StepResult, { kind: "replied" }>>({
      store: this.#options.store,
      histories: this.#histories,
      sessionId: id,
      plan: async ({ session, epoch, pending, history }) => {
        // An admitted boundary whose reply is not persisted: resend it, no new boundary.
        if (session.isAwaitingReply && epoch !== undefined) return this.#resend(session, epoch, history, startedAt);
        if (isIdle(history.last, pending)) return { kind: "answer", value: { kind: "idle" } };
        const context = await this.#options.compose({ location: session.location, sessionId: id });
        const planned = await this.#plan(context, session, epoch, pending);
        if (planned.kind === "blocked") return { kind: "answer", value: planned };
        this.#checkSourceValues(id, planned.commit, epoch);
        const lease = { holder: this.#holder, expiresAt: this.#clock.now() + this.#leaseMs };
        const admitted = {
          ...(planned.commit.newEpoch === undefined ? {} : { baseline: planned.commit.newEpoch.baseline }),
          ...(planned.commit.systemUpdate === undefined ? {} : { update: planned.commit.systemUpdate.text }),
        };
        return {
          kind: "commit",
          commit: { ...planned.commit, lease },
          committed: (committed, caughtUp) =>
            this.#ready(session, committed.revision, committed.epoch, caughtUp, admitted, startedAt),
        };
      },
    });
  }

  /**
   * Resends the admitted boundary of `session` unless another runtime's lease says it is
   * calling the provider for it right now (then `in-flight`), or the lease was settled meanwhile (read again).
   */
  async #resend(
    session: SessionRecord,
    epoch: EpochRecord,
    history: SessionHistory,
    startedAt: number,
  ): Promise<BoundaryRound<Ready | Exclude<StepResult, { kind: "replied" }>>> {
    const { store } = this.#options;
    const now = this.#clock.now();
    const lease = { holder: this.#holder, expiresAt: now + this.#leaseMs };
    if (!(await store.claimLease(session.id, lease, now))) {
      const held = (await store.session(session.id)).lease;
      if (held === undefined) return { kind: "replan" };
      if (!(await this.#takeOverFromGoneHolder(session.id, lease, held))) {
        return { kind: "answer", value: { kind: "in-flight", until: held.expiresAt } };
      }
    }
    return { kind: "answer", value: this.#ready(session, session.revision, epoch, history, {}, startedAt) };
  }

  /** What one boundary commits: a first Baseline, a due new epoch, or the reconciled change (`boundaryCommit`). */
  async #plan(
    context: SystemContext,
    session: SessionRecord,
    epoch: EpochRecord | undefined,
    pending: readonly PendingPrompt[],
  ): Promise<{ kind: "commit"; commit: BoundaryCommit } | { kind: "blocked"; keys: readonly string[] }> {
    const systemPrompt = this.#options.systemPrompt ?? null;
    const decided = await decideBoundary(context, epoch, this.#epochDue(session, epoch));
    if (decided.kind === "blocked") return decided;
    return { kind: "commit", commit: boundaryCommit(decided, { promote: pending, systemPrompt }) };
  }

  /** Why the next boundary starts a new epoch, if it must: a transition asked for, or another host system prompt. */
  #epochDue(session: SessionRecord, epoch: EpochRecord | undefined): EpochReason | undefined {
    if (epoch === undefined) return undefined;
    if (session.epochDue !== undefined) return session.epochDue;
    const systemPrompt = this.#options.systemPrompt ?? null;
    // A host system prompt other than the one the epoch began with needs a new epoch too.
    return epoch.systemPrompt !== undefined && epoch.systemPrompt !== systemPrompt ? "replacement" : undefined;
  }

  /** The request of the admitted boundary, built from durable state only, so a retry or a restart sends the same bytes. */
  #ready(
    session: SessionRecord,
    revision: number,
    epoch: EpochRecord,
    history: SessionHistory,
    admitted: Ready["admitted"],
    startedAt: number,
  ): Ready {
    const request = requestOf(session, this.#options.systemPrompt, epoch, history.projected(epoch));
    return {
      kind: "ready",
      request,
      revision,
      location: session.location,
      lastSeq: history.lastSeq,
      history,
      admitted,
      startedAt,
    };
  }

  /**
   * Refuses a boundary that would admit a source value over `limits.sourceValueBytes`
   * (only values that changed are measured: kept entries are carried as the same object).
   */
  #checkSourceValues(id: string, commit: BoundaryCommit, epoch: EpochRecord | undefined): void {
    const snapshot = commit.newEpoch?.snapshot ?? commit.systemUpdate?.snapshot;
    if (snapshot === undefined) return;
    const previous = commit.newEpoch === undefined ? epoch?.snapshot : undefined;
    const maxBytes = this.#limits.sourceValueBytes;
    const { keys, entries } = entryWrites(snapshot, previous, commit.systemUpdate?.change);
    for (const [i, key] of keys.entries()) {
      // A value's JSON is part of its entry's: a short entry needs no count of its own.
      if ((entries[i] as string).length * 3 <= maxBytes) continue;
      const encoded = JSON.stringify((snapshot[key] as SnapshotEntry).value) ?? "";
      if (encoded.length > maxBytes || (encoded.length * 3 > maxBytes && bytesOf(encoded) > maxBytes)) {
        throw new SizeLimitExceeded({
          sessionId: id,
          what: `value of source ${key}`,
          limit: "sourceValueBytes",
          bytes: bytesOf(encoded),
          maxBytes,
        });
      }
    }
  }

  /** Runs each call's tool within its deadline; every failure becomes a result that says what went wrong. */
  async #runTools(id: string, location: string, calls: readonly ToolCall[]) {
    const results: Array<{ callId: string; name: string; result: string }> = [];
    for (const call of calls) results.push({ callId: call.id, name: call.name, result: await this.#runTool(id, location, call) });
    return results;
  }

  async #runTool(id: string, location: string, call: ToolCall): Promise<string> {
    const entry = Object.hasOwn(this.#options.tools ?? {}, call.name) ? this.#options.tools?.[call.name] : undefined;
    if (entry === undefined) return `Error: unknown tool ${JSON.stringify(call.name)}`;
    const tool = typeof entry === "function" ? entry : entry.run;
    const deadlineMs =
      (typeof entry === "function" ? undefined : entry.deadlineMs) ?? this.#options.toolDeadlineMs ?? defaultToolDeadlineMs;
    let result: string;
    try {
      const output = await withinDeadline(
        () => tool(call.input, { sessionId: id, location, files: this.#projectFiles(id, location) }),
        deadlineMs,
        `tool ${JSON.stringify(call.name)}`,
      );
      result = typeof output === "string" ? output : messageOf(output);
    } catch (error) {
      return `Error: ${messageOf(error)}`;
    }
    const index = loneSurrogateAt(result);
    if (index >= 0) {
      return `Error: tool ${JSON.stringify(call.name)} returned text that is not well-formed (a lone surrogate at index ${index})`;
    }
    const maxBytes = this.#limits.toolResultBytes;
    if (result.length * 3 > maxBytes) {
      const bytes = bytesOf(result);
      if (bytes > maxBytes) {
        return `Error: tool ${JSON.stringify(call.name)} returned ${bytes} bytes, over the limit of ${maxBytes} bytes (limits.toolResultBytes)`;
      }
    }
    return result;
  }

  #projectFiles(id: string, location: string): ProjectFiles {
    const files = this.#options.projectFiles?.(id, location);
    if (files !== undefined) return files;
    return {
      readFile: () => Promise.reject(new ProjectFilesUnavailable({ sessionId: id })),
    };
  }

  #provider(name: string): Provider {
    const provider = this.#options.providers[name];
    if (provider === undefined) throw new ProviderNotFound({ provider: name });
    return provider;
  }
}

/** The provider's send options of a step: a listener that throws does not break the call. */
function sendOptions(options: StepOptions): SendOptions {
  const { onText, signal } = options;
  return {
    ...(onText === undefined
      ? {}
      : {
          onText: (text: string, attempt: number) => {
            try {
              onText(text, attempt);
            } catch {
              // The caller's display failing must not lose the reply.
            }
          },
        }),
    ...(signal === undefined ? {} : { signal }),
  };
}
