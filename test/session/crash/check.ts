// The crash checker: reopens a database a killed worker left behind and lists every
// violated invariant (an empty list means the database is consistent).
//
// Invariants, per session:
// - Snapshot advance with its message: replaying an epoch (its Baseline, then its
//   Mid-Conversation System Messages in order) gives exactly the epoch's stored Context
//   Snapshot. A message committed without its snapshot advance, or an advance without
//   its message, breaks the equality.
// - No message admitted twice: sequence numbers are 1..N without gaps; every part of a
//   Mid-Conversation System Message changes the replayed state (a second admission of
//   the same change restates a value already in effect); no user text appears twice;
//   no two replies in a row; tool results follow their call, once each.
// - Each prompt pending or promoted exactly once: a promoted prompt points at a user
//   message with its text, no two prompts at one message, every user message has its
//   prompt; every prompt the worker saw admitted is stored exactly once.
// - The Baseline unchanged within its epoch: an epoch's Baseline equals what earlier
//   checks of the same database read, and every request the worker saw sent carried
//   the Baseline of a stored epoch, epochs never going back.
// - Epoch bookkeeping: numbers 1..E, each message tagged with the epoch whose span holds
//   it, the reply flag agrees with the last message, snapshots parse.

import { canonicalJson, type Json, parseSnapshot, type Snapshot } from "../../../core/system-context/index.ts";
import type { CrashDatabase, EpochRow, MessageRow, PromptRow, SessionRow } from "./databases.ts";
import { isRemovable, type Part, parseParts, renderDel, sha256, sourceCount, sourceKey } from "./protocol.ts";

/** What the worker printed before it was killed. */
export interface WorkerReport {
  /** Texts of prompts whose admission resolved. */
  readonly prompts: readonly string[];
  /** sha256 of the Baseline of every request a replied step sent, in order. */
  readonly sent: readonly string[];
}

/** Baselines read by earlier checks of the same database: `session#epoch` → text. */
export type BaselineMemory = Map<string, string>;

const removable = new Map(Array.from({ length: sourceCount }, (_, i) => [sourceKey(i), isRemovable(i)]));

/** Checks every session of the database (a SQLite file or a PostgreSQL schema); returns the violations found. */
export async function checkDatabase(database: CrashDatabase, memory: BaselineMemory, report?: WorkerReport): Promise<string[]> {
  const violations: string[] = [];
  // Reopen through the store first: it recovers what the kill left (SQLite's WAL) and must read every session back.
  const store = await database.openStore();
  const rows = await database.rows();
  try {
    const sessions = await rows.sessions();
    for (const session of sessions) {
      const problems: string[] = [];
      try {
        await store.session(session.id);
        await store.messages(session.id);
        await store.activeEpoch(session.id);
        await store.pendingPrompts(session.id);
      } catch (error) {
        problems.push(`the store cannot read it back: ${error instanceof Error ? error.message : String(error)}`);
      }
      const messages = await rows.messages(session.id);
      const epochs = await rows.epochs(session.id);
      const prompts = await rows.prompts(session.id);
      // The one read of a boundary (SQLite: from the session's head) agrees with the rows.
      const read = await store.readBoundary?.(session.id, 0).catch(() => undefined);
      if (read !== undefined && read.appended.length !== messages.length)
        problems.push(`one read gives ${read.appended.length} messages where the rows hold ${messages.length}`);
      if (read !== undefined && (read.epoch?.number ?? 0) !== (epochs.at(-1)?.number ?? 0))
        problems.push(`one read gives epoch ${read.epoch?.number} where the rows end at ${epochs.at(-1)?.number}`);
      checkMessages(messages, session, problems);
      checkEpochs(session.id, messages, epochs, memory, problems);
      checkPrompts(messages, prompts, problems);
      if (report !== undefined && sessions.length === 1) checkReport(report, epochs, prompts, problems);
      for (const problem of problems) violations.push(`session ${session.id.slice(0, 8)}: ${problem}`);
    }
    if (report !== undefined && sessions.length !== 1 && (report.prompts.length > 0 || report.sent.length > 0)) {
      violations.push(`the worker reported activity but the database holds ${sessions.length} sessions`);
    }
  } finally {
    await rows.close();
    await store.close();
  }
  return violations;
}

function checkMessages(messages: readonly MessageRow[], session: SessionRow, problems: string[]): void {
  messages.forEach((message, i) => {
    if (message.seq !== i + 1) problems.push(`message ${i + 1} has seq ${message.seq} (gap or duplicate)`);
  });
  const userTexts = new Set<string>();
  for (const [i, message] of messages.entries()) {
    const previous = messages[i - 1];
    if (message.role === "user") {
      if (userTexts.has(message.text)) problems.push(`user text ${JSON.stringify(message.text)} admitted twice`);
      userTexts.add(message.text);
    }
    if (message.role === "assistant" && previous?.role === "assistant") {
      problems.push(`two replies in a row at seq ${message.seq}`);
    }
    if (message.role === "assistant") {
      const calls = (JSON.parse(message.data ?? "{}") as { toolCalls?: Array<{ id: string }> }).toolCalls ?? [];
      calls.forEach((call, j) => {
        const result = messages[i + 1 + j];
        const callId = result?.role === "tool" ? (JSON.parse(result.data ?? "{}") as { callId?: string }).callId : undefined;
        if (callId !== call.id) problems.push(`the result of tool call ${call.id} (seq ${message.seq}) does not follow it`);
      });
    }
    if (message.role === "tool") {
      let at = i - 1;
      while (messages[at]?.role === "tool") at--;
      if (messages[at]?.role !== "assistant") problems.push(`tool result at seq ${message.seq} follows no call`);
    }
  }
  const last = messages.at(-1);
  if (session.awaiting_reply === 1 && (last?.role === "assistant" || last?.role === "summary")) {
    problems.push(`awaiting a reply, yet the last message (seq ${last.seq}) is a ${last.role}`);
  }
  if (session.awaiting_reply === 0 && (last?.role === "user" || last?.role === "system-update")) {
    problems.push(`not awaiting a reply, yet the last message (seq ${last.seq}) is a ${last.role}`);
  }
}

/** Applies one rendered text to the replayed state; reports parts that change nothing. */
function apply(state: Map<string, string>, parts: readonly Part[], where: string, problems: string[]): void {
  const seen = new Set<string>();
  for (const part of parts) {
    if (seen.has(part.key)) problems.push(`${where} names ${part.key} twice`);
    seen.add(part.key);
    if (part.op === "set") {
      if (state.get(part.key) === part.json) problems.push(`${where} restates ${part.key} unchanged (admitted twice)`);
      state.set(part.key, part.json);
    } else {
      if (!state.has(part.key)) problems.push(`${where} removes ${part.key}, which is not in effect`);
      state.delete(part.key);
    }
  }
}

function checkEpochs(
  sessionId: string,
  messages: readonly MessageRow[],
  epochs: readonly EpochRow[],
  memory: BaselineMemory,
  problems: string[],
): void {
  epochs.forEach((epoch, i) => {
    if (epoch.number !== i + 1) problems.push(`epoch ${i + 1} is numbered ${epoch.number}`);
    const earlier = epochs[i - 1];
    if (earlier !== undefined && epoch.started_seq < earlier.started_seq) {
      problems.push(`epoch ${epoch.number} starts (seq ${epoch.started_seq}) before epoch ${earlier.number}`);
    }
    const remembered = memory.get(`${sessionId}#${epoch.number}`);
    if (remembered !== undefined && remembered !== epoch.baseline) {
      problems.push(`the Baseline of epoch ${epoch.number} changed since an earlier check`);
    }
    memory.set(`${sessionId}#${epoch.number}`, epoch.baseline);
  });
  if (messages.length > 0 && epochs.length === 0) problems.push("messages without any Context Epoch");
  for (const message of messages) {
    // The epoch whose span holds the message: the last one started at or before it.
    const holder = epochs.filter((epoch) => epoch.started_seq <= message.seq).at(-1);
    if (holder?.number !== message.epoch) {
      problems.push(`message ${message.seq} is tagged epoch ${message.epoch}, but epoch ${holder?.number} holds it`);
    }
  }
  for (const epoch of epochs) {
    const where = `epoch ${epoch.number}`;
    const state = new Map<string, string>();
    try {
      const parts = parseParts(epoch.baseline);
      if (parts.some((part) => part.op !== "set")) problems.push(`${where}: the Baseline removes something`);
      apply(state, parts, `${where} Baseline`, problems);
      for (const message of messages) {
        if (message.role !== "system-update" || message.epoch !== epoch.number) continue;
        const updates = parseParts(message.text);
        if (updates.length === 0) problems.push(`${where}: empty Mid-Conversation System Message at seq ${message.seq}`);
        apply(state, updates, `${where} message ${message.seq}`, problems);
      }
    } catch (error) {
      problems.push(`${where}: ${error instanceof Error ? error.message : String(error)}`);
      continue;
    }
    let snapshot: Snapshot;
    try {
      snapshot = parseSnapshot(JSON.parse(epoch.snapshot));
    } catch (error) {
      problems.push(`${where}: corrupt snapshot: ${error instanceof Error ? error.message : String(error)}`);
      continue;
    }
    const stored = new Map(Object.entries(snapshot).map(([key, entry]) => [key, canonicalJson(entry.value as Json)]));
    const keys = new Set([...state.keys(), ...stored.keys()]);
    for (const key of [...keys].sort()) {
      const replayed = state.get(key);
      const inSnapshot = stored.get(key);
      if (replayed !== inSnapshot) {
        problems.push(
          `${where}: snapshot and messages disagree on ${key}: messages say ${short(replayed)}, the snapshot ${short(inSnapshot)}`,
        );
      }
      const entry = snapshot[key];
      if (entry !== undefined && removable.get(key) === true && entry.removed !== renderDel(key)) {
        problems.push(`${where}: the snapshot entry of ${key} lacks its removal text`);
      }
    }
  }
}

function short(json: string | undefined): string {
  if (json === undefined) return "(not in effect)";
  return json.length > 40 ? `${json.slice(0, 40)}… (${json.length} chars)` : json;
}

function checkPrompts(messages: readonly MessageRow[], prompts: readonly PromptRow[], problems: string[]): void {
  const bySeq = new Map(messages.map((message) => [message.seq, message]));
  const promotedAt = new Map<number, number>();
  const texts = new Set<string>();
  for (const prompt of prompts) {
    if (texts.has(prompt.text)) problems.push(`prompt text ${JSON.stringify(prompt.text)} stored twice`);
    texts.add(prompt.text);
    if (prompt.promoted_seq === null) continue;
    const message = bySeq.get(prompt.promoted_seq);
    if (message?.role !== "user" || message.text !== prompt.text) {
      problems.push(`prompt ${prompt.id} says it was promoted at seq ${prompt.promoted_seq}, which is not its user message`);
    }
    if (promotedAt.has(prompt.promoted_seq)) problems.push(`two prompts promoted at seq ${prompt.promoted_seq}`);
    promotedAt.set(prompt.promoted_seq, prompt.id);
  }
  for (const message of messages) {
    if (message.role === "user" && !promotedAt.has(message.seq)) {
      problems.push(`user message ${message.seq} has no promoted prompt`);
    }
  }
}

function checkReport(report: WorkerReport, epochs: readonly EpochRow[], prompts: readonly PromptRow[], problems: string[]): void {
  const stored = new Map<string, number>();
  for (const prompt of prompts) stored.set(prompt.text, (stored.get(prompt.text) ?? 0) + 1);
  for (const text of report.prompts) {
    const count = stored.get(text) ?? 0;
    if (count !== 1) problems.push(`admitted prompt ${JSON.stringify(text)} is stored ${count} times`);
  }
  // Epochs by Baseline hash; two epochs may render the same Baseline.
  const epochsOf = new Map<string, number[]>();
  for (const epoch of epochs) {
    const hash = sha256(epoch.baseline);
    epochsOf.set(hash, [...(epochsOf.get(hash) ?? []), epoch.number]);
  }
  let latest = 0;
  for (const hash of report.sent) {
    const numbers = epochsOf.get(hash);
    const next = numbers?.find((number) => number >= latest);
    if (numbers === undefined) problems.push(`a request was sent with a Baseline no stored epoch has (${hash.slice(0, 12)})`);
    else if (next === undefined)
      problems.push(`a request went back to the Baseline of epoch ${numbers.at(-1)} after epoch ${latest}`);
    else latest = next;
  }
}
