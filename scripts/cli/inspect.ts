// Owns `context-host inspect`: a session's durable history with each reply's token usage,
// the totals, and what they cost by the pricing table (when the model has a row).

import { existsSync, statSync } from "node:fs";
import path from "node:path";
import { escapeControl, type ProviderRequest, type TokenUsage } from "../../core/index.ts";
import { type CachedRequest, costOf, priceOf, replayCache } from "../../core/providers.ts";
import { SqliteSessionStore, sessionsFile, storedRequests, listSessions as storedSessions } from "../../core/store.ts";
import { flagOption, keepText, listOption, parseCommandLine } from "./arguments.ts";
import { UsageInvalid } from "./usage.ts";

export interface InspectArgs {
  /** The data folder, or `file` when the sessions file is named. */
  readonly dataDir: string;
  /** A sessions file named on the command line (`inspect DB`). */
  readonly file?: string;
  /** The session to show; with `list`, none. */
  readonly sessionId: string;
  /** `--list`: the stored sessions, one line each, instead of one session. */
  readonly list: boolean;
  readonly json: boolean;
  /** `--model M`: replay the active epoch's requests through the cache model as sent to M (`claude-…`: Anthropic's rules, others OpenAI's). */
  readonly model?: string;
}

const fail = (reason: string) => new UsageInvalid({ command: "inspect", reason });

/** The options of `inspect`: `[DB] SESSION [--data DIR] [--model M] [--json]`, `--session ID` for SESSION, or `--list`. */
const inspectLine = {
  command: "inspect",
  shared: ["data", "model", "json"],
  own: {
    session: listOption("a session id", keepText),
    list: flagOption(),
  },
  readOperand: keepText,
} as const;

/**
 * `inspect [DB] SESSION [--data DIR] [--json]`, or `--session ID` for SESSION, or `--list`
 * for every session: DB is a sessions file (an existing file); the data folder defaults to
 * `.context-host`.
 */
export function parseInspectArgs(args: readonly string[], cwd: string): InspectArgs {
  const { options, operands } = parseCommandLine(args, cwd, inspectLine);
  const fileAt = operands.findIndex((operand) => isFile(path.resolve(cwd, operand)));
  const file = fileAt === -1 ? undefined : path.resolve(cwd, operands[fileAt] as string);
  const sessionIds = [...options.session, ...operands.filter((_operand, index) => index !== fileAt)];
  if (sessionIds.length > 1) throw fail(`one session id expected, got also ${JSON.stringify(sessionIds[1])}`);
  const sessionId = sessionIds[0];
  if (options.list && sessionId !== undefined) throw fail("--list lists every session: give no session id with it");
  if (!options.list && sessionId === undefined) throw fail("inspect needs a session id (or --list)");
  return {
    dataDir: options.data ?? path.join(cwd, ".context-host"),
    ...(file === undefined ? {} : { file }),
    sessionId: sessionId ?? "",
    list: options.list,
    json: options.json,
    ...(options.model === undefined ? {} : { model: options.model }),
  };
}

function isFile(candidate: string): boolean {
  try {
    return statSync(candidate).isFile();
  } catch {
    return false;
  }
}

const zero: TokenUsage = { input: 0, cacheRead: 0, cacheWrite: 0, output: 0 };
const add = (a: TokenUsage, b: TokenUsage): TokenUsage => ({
  input: a.input + b.input,
  cacheRead: a.cacheRead + b.cacheRead,
  cacheWrite: a.cacheWrite + b.cacheWrite,
  ...((a.cacheWrite1h ?? b.cacheWrite1h) === undefined ? {} : { cacheWrite1h: (a.cacheWrite1h ?? 0) + (b.cacheWrite1h ?? 0) }),
  output: a.output + b.output,
});

/** The cache model's view of the active epoch's requests on `model`. */
function cacheReplay(model: string, requests: readonly ProviderRequest[]): readonly CachedRequest[] {
  return replayCache(requests, { api: model.startsWith("claude-") ? "anthropic" : "openai", model });
}

function describeCache(index: number, replayed: CachedRequest): string {
  const { input, cacheRead, cacheWrite } = replayed.usage;
  const usd = replayed.usd === undefined ? "" : `, $${replayed.usd.toFixed(4)}`;
  const miss = replayed.miss === undefined ? "" : `; not read: ${replayed.miss.tokens} tokens (${replayed.miss.reason})`;
  return `  request ${index + 1}: cache read ${cacheRead}, cache write ${cacheWrite}, in ${input}${usd}${miss}`;
}

/** Prints the session; exit 0, or 1 when the data folder has no sessions file. */
export async function inspect(args: InspectArgs & { out: (text: string) => void; err: (text: string) => void }): Promise<number> {
  const file = args.file ?? sessionsFile(args.dataDir);
  if (!existsSync(file)) {
    args.err(`context-host: no sessions in ${args.dataDir}`);
    return 1;
  }
  const store = new SqliteSessionStore(file);
  try {
    if (args.list) return await listSessions(store, args);
    const session = await store.session(args.sessionId);
    const messages = await store.messages(args.sessionId);
    const epoch = await store.activeEpoch(args.sessionId);
    const total = messages.reduce((sum, message) => (message.usage === undefined ? sum : add(sum, message.usage)), zero);
    const row = priceOf(session.model);
    const usd = row === undefined ? undefined : costOf(total, row.price);
    const cache =
      args.model === undefined || epoch === undefined
        ? undefined
        : cacheReplay(args.model, storedRequests(session, messages, epoch));
    if (args.json) {
      const replay = cache === undefined ? {} : { cache: { model: args.model, requests: cache } };
      args.out(JSON.stringify({ session, epoch: epoch ?? null, messages, total, usd: usd ?? null, ...replay }, null, 2));
      return 0;
    }
    args.out(`session ${session.id}: ${session.provider}/${session.model} in ${session.location}`);
    if (epoch === undefined) args.out("no Context Epoch yet");
    else {
      const started = [...new Set(messages.map((m) => m.epoch))].join(", ");
      args.out(`Context Epoch ${epoch.number} (${epoch.reason}); epochs with messages: ${started || "none"}`);
      args.out("Baseline System Context:");
      for (const line of epoch.baseline.split("\n")) args.out(`  | ${escapeControl(line)}`);
      args.out("Context Snapshot:");
      for (const [key, entry] of Object.entries(epoch.snapshot))
        args.out(`  ${key} = ${escapeControl(JSON.stringify(entry.value))}`);
    }
    args.out("messages (system-update: a Mid-Conversation System Message, hidden from transcripts):");
    for (const message of messages) {
      const usage = message.usage;
      const counts =
        usage === undefined
          ? ""
          : `  [in ${usage.input}, cache read ${usage.cacheRead}, cache write ${usage.cacheWrite}, out ${usage.output}]`;
      const text = message.text.length > 70 ? `${message.text.slice(0, 69)}…` : message.text;
      args.out(`${String(message.seq).padStart(4)} ${message.role.padEnd(13)} ${escapeControl(JSON.stringify(text))}${counts}`);
    }
    args.out(
      `total: in ${total.input}, cache read ${total.cacheRead}, cache write ${total.cacheWrite}, out ${total.output}` +
        (usd === undefined || row === undefined ? "" : `; $${usd.toFixed(4)} at ${row.source} (${row.date})`),
    );
    if (cache !== undefined) {
      args.out(
        `the active epoch's requests on ${args.model}, by the cache model (tokens estimated at about four characters each; tools not counted):`,
      );
      cache.forEach((replayed, index) => {
        args.out(describeCache(index, replayed));
      });
      const sum = cache.reduce((a, b) => a + (b.usd ?? 0), 0);
      if (cache.some((each) => each.usd !== undefined)) args.out(`  in all: $${sum.toFixed(4)}`);
    }
    return 0;
  } finally {
    await store.close();
  }
}

/** `--list`: each stored session, oldest first, with its provider, model, location and message count. */
async function listSessions(store: SqliteSessionStore, args: InspectArgs & { out: (text: string) => void }): Promise<number> {
  const sessions = [];
  for (const session of await storedSessions(store)) {
    const messages = (await store.messages(session.id)).length;
    sessions.push({ id: session.id, provider: session.provider, model: session.model, location: session.location, messages });
  }
  if (args.json) args.out(JSON.stringify({ sessions }, null, 2));
  else if (sessions.length === 0) args.out("no sessions");
  else
    for (const s of sessions)
      args.out(escapeControl(`${s.id}  ${s.provider}/${s.model}  ${s.location}  ${s.messages} message(s)`));
  return 0;
}
