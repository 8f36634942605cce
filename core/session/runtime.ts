// Owns the session runtime: durable admission of input, and the Safe Provider-Turn
// Boundary. One `step` runs one boundary (initialize or reconcile, promote input,
// admit one combined Mid-Conversation System Message) and at most one provider call.
// Nothing here runs unless asked: no timers, no watchers, no waking idle sessions.

import { randomUUID } from "node:crypto";
import type { SourceEnv } from "../registry/registry.ts";
import type { ProjectFiles } from "../sources/instructions/service.ts";
import {
  type Generation,
  InitializationBlocked,
  initialize,
  reconcile,
  replaceOrReconcile,
  type SystemContext,
} from "../system-context/index.ts";
import { BoundaryContended, ProjectFilesUnavailable, ProviderNotFound, SessionBusy } from "./errors.ts";
import { SessionHistories, type SessionHistory } from "./history.ts";
import { requestOf } from "./projection.ts";
import type { Provider, ProviderReply, ProviderRequest, ToolCall } from "./provider.ts";
import {
  type BoundaryCommit,
  type EpochReason,
  type EpochRecord,
  type PendingPrompt,
  RevisionConflict,
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

/** The outcome of one `step`. */
export type StepResult =
  | { readonly kind: "replied"; readonly request: ProviderRequest; readonly reply: ProviderReply }
  | { readonly kind: "blocked"; readonly keys: readonly string[] }
  | { readonly kind: "idle" };

export interface RuntimeOptions {
  readonly store: SessionStore;
  /** Composes the System Context for a boundary of a session in `env.location`. */
  compose(env: SourceEnv): Promise<SystemContext>;
  readonly providers: Readonly<Record<string, Provider>>;
  readonly systemPrompt?: string;
  readonly tools?: Readonly<Record<string, Tool>>;
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
}

/** Rounds of re-planning after another runtime committed first. */
const maxReplans = 8;

function isIdle(last: StoredMessage | undefined, pending: readonly PendingPrompt[]): boolean {
  if (pending.length > 0) return false;
  return last === undefined || last.role !== "tool";
}

export class SessionRuntime {
  readonly #options: RuntimeOptions;
  readonly #histories = new SessionHistories();

  constructor(options: RuntimeOptions) {
    this.#options = options;
  }

  /** Creates a session and returns its id. Its first boundary renders the Baseline. */
  async createSession(session: { location: string; provider: string; model: string }): Promise<string> {
    this.#provider(session.provider);
    const id = randomUUID();
    await this.#options.store.createSession({ id, ...session });
    return id;
  }

  /** Admits input durably. It is promoted into history at the next boundary; nothing is sent now. */
  async prompt(id: string, text: string): Promise<void> {
    if (typeof text !== "string" || text.trim() === "") {
      throw new TypeError(`prompt for session ${id}: the text is empty; a prompt must say something`);
    }
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
    await this.#options.store.updateSession(id, { location, epochDue: "move" });
  }

  /** Summarises projected history through the provider; the next boundary starts a new epoch. */
  async compact(id: string): Promise<void> {
    const { store } = this.#options;
    const session = await store.session(id);
    if (session.isAwaitingReply)
      throw new SessionBusy({ sessionId: id, reason: "a provider turn is pending; step before compacting" });
    const epoch = await store.activeEpoch(id);
    if (epoch === undefined) return; // nothing was ever sent: nothing to summarise
    const history = await this.#histories.of(id, store);
    const request = requestOf(session, this.#options.systemPrompt, epoch, history.projected(epoch));
    const instruction = this.#options.compactionInstruction ?? defaultCompactionInstruction;
    const reply = await this.#provider(session.provider).send({
      ...request,
      messages: [...request.messages, { role: "user", text: instruction }],
    });
    await store.commitSummary(id, session.revision, reply.text);
  }

  /** Runs one Safe Provider-Turn Boundary and at most one provider call. */
  async step(id: string): Promise<StepResult> {
    const prepared = await this.#boundary(id);
    if (prepared.kind !== "ready") return prepared;
    const { request, location, lastSeq, history } = prepared;
    const reply = await this.#provider(request.provider).send(request);
    const toolResults = await this.#runTools(id, location, reply.toolCalls ?? []);
    const { store } = this.#options;
    for (let revision = prepared.revision; ; ) {
      try {
        const committed = await store.commitReply(id, revision, reply, toolResults);
        history.append(committed.appended);
        break;
      } catch (error) {
        if (!(error instanceof RevisionConflict)) throw error;
        // Another runtime persisted the reply to this same request first: ours is a duplicate.
        const session = await store.session(id);
        if (!session.isAwaitingReply || (await store.messages(id, lastSeq)).length > 0) break;
        // Only a transition (move, switch) advanced the revision in flight: this reply is still awaited.
        revision = session.revision;
      }
    }
    return { kind: "replied", request, reply };
  }

  /**
   * Reads the session, its active epoch, its pending input and what was appended to its
   * history once, and commits the boundary; the commit returns what the request needs.
   */
  async #boundary(id: string): Promise<Ready | { kind: "blocked"; keys: readonly string[] } | { kind: "idle" }> {
    const { store } = this.#options;
    for (let round = 0; round < maxReplans; round++) {
      const session = await store.session(id);
      const epoch = await store.activeEpoch(id);
      const history = await this.#histories.of(id, store);
      // An admitted boundary whose reply is not persisted: resend it, no new boundary.
      if (session.isAwaitingReply && epoch !== undefined) return this.#ready(session, session.revision, epoch, history);
      const pending = await store.pendingPrompts(id);
      if (isIdle(history.last, pending)) return { kind: "idle" };
      const context = await this.#options.compose({ location: session.location, sessionId: id });
      const planned = await this.#plan(context, session, epoch, pending);
      if (planned.kind === "blocked") return planned;
      let committed: Awaited<ReturnType<SessionStore["commitBoundary"]>>;
      try {
        committed = await store.commitBoundary(id, session.revision, planned.commit);
      } catch (error) {
        if (error instanceof RevisionConflict) continue; // another runtime admitted first: plan again
        throw error;
      }
      history.append(committed.appended);
      if (history.isEmpty) await history.refresh(store);
      return this.#ready(session, committed.revision, committed.epoch, history);
    }
    throw new BoundaryContended({ sessionId: id, rounds: maxReplans });
  }

  /** What one boundary commits: a first Baseline, a due new epoch, or the reconciled change. */
  async #plan(
    context: SystemContext,
    session: SessionRecord,
    epoch: EpochRecord | undefined,
    pending: readonly PendingPrompt[],
  ): Promise<{ kind: "commit"; commit: BoundaryCommit } | { kind: "blocked"; keys: readonly string[] }> {
    const systemPrompt = this.#options.systemPrompt ?? null;
    const startEpoch = (generation: Generation, reason: EpochReason) => ({
      kind: "commit" as const,
      commit: { newEpoch: { ...generation, reason, systemPrompt }, promote: pending, settlesEpochDue: true },
    });
    if (epoch === undefined) {
      try {
        return startEpoch(await initialize(context), "initial");
      } catch (error) {
        if (error instanceof InitializationBlocked) return { kind: "blocked", keys: error.keys };
        throw error;
      }
    }
    // A host system prompt other than the one the epoch began with needs a new epoch too.
    const due =
      session.epochDue ?? (epoch.systemPrompt !== undefined && epoch.systemPrompt !== systemPrompt ? "replacement" : undefined);
    // A due transition and the epoch's continuation are decided from one observation.
    let next: Awaited<ReturnType<typeof reconcile>>;
    if (due !== undefined) {
      const decided = await replaceOrReconcile(context, epoch.snapshot);
      if (decided.kind === "replaced") return startEpoch(decided.generation, due);
      // Blocked by unavailable admitted context: the epoch continues.
      next = decided.reconciled;
    } else {
      next = await reconcile(context, epoch.snapshot);
    }
    switch (next.kind) {
      case "unchanged":
      case "replacement-blocked":
        return { kind: "commit", commit: { promote: pending, settlesEpochDue: false } };
      case "updated":
        return {
          kind: "commit",
          commit: { promote: pending, systemUpdate: { text: next.text, snapshot: next.snapshot }, settlesEpochDue: false },
        };
      case "replaced":
        return startEpoch(next.generation, due ?? "replacement");
    }
  }

  /** The request of the admitted boundary, built from durable state only, so a retry or a restart sends the same bytes. */
  #ready(session: SessionRecord, revision: number, epoch: EpochRecord, history: SessionHistory): Ready {
    const request = requestOf(session, this.#options.systemPrompt, epoch, history.projected(epoch));
    return { kind: "ready", request, revision, location: session.location, lastSeq: history.lastSeq, history };
  }

  async #runTools(id: string, location: string, calls: readonly ToolCall[]) {
    const results: Array<{ callId: string; name: string; result: string }> = [];
    for (const call of calls) {
      const tool = this.#options.tools?.[call.name];
      let result: string;
      if (tool === undefined) {
        result = `Error: unknown tool ${JSON.stringify(call.name)}`;
      } else {
        try {
          result = String(await tool(call.input, { sessionId: id, location, files: this.#projectFiles(id, location) }));
        } catch (error) {
          result = `Error: ${error instanceof Error ? error.message : String(error)}`;
        }
      }
      results.push({ callId: call.id, name: call.name, result });
    }
    return results;
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
