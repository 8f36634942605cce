// Owns `context-host inspect`: a session's durable history with each reply's token usage,
// the totals, and what they cost by the pricing table (when the model has a row).

import { existsSync } from "node:fs";
import path from "node:path";
import { costOf, priceOf } from "../../core/providers/pricing.ts";
import type { TokenUsage } from "../../core/session/provider.ts";
import { SqliteSessionStore, sessionsFile } from "../../core/session/store/sqlite.ts";
import { UsageError } from "./usage.ts";

export interface InspectArgs {
  readonly dataDir: string;
  readonly sessionId: string;
  readonly json: boolean;
}

/** `inspect SESSION [--data DIR] [--json]`; the data folder defaults to `.context-host`. */
export function parseInspectArgs(args: readonly string[], cwd: string): InspectArgs {
  let dataDir = path.join(cwd, ".context-host");
  let sessionId: string | undefined;
  let json = false;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    if (arg === "--json") json = true;
    else if (arg === "--data") {
      const value = args[++i];
      if (value === undefined) throw new UsageError({ command: "inspect", reason: "--data needs a folder" });
      dataDir = path.resolve(cwd, value);
    } else if (arg.startsWith("-")) throw new UsageError({ command: "inspect", reason: `unknown option ${arg}` });
    else if (sessionId === undefined) sessionId = arg;
    else throw new UsageError({ command: "inspect", reason: `one session id expected, got also ${JSON.stringify(arg)}` });
  }
  if (sessionId === undefined) throw new UsageError({ command: "inspect", reason: "inspect needs a session id" });
  return { dataDir, sessionId, json };
}

const zero: TokenUsage = { input: 0, cacheRead: 0, cacheWrite: 0, output: 0 };
const add = (a: TokenUsage, b: TokenUsage): TokenUsage => ({
  input: a.input + b.input,
  cacheRead: a.cacheRead + b.cacheRead,
  cacheWrite: a.cacheWrite + b.cacheWrite,
  ...((a.cacheWrite1h ?? b.cacheWrite1h) === undefined ? {} : { cacheWrite1h: (a.cacheWrite1h ?? 0) + (b.cacheWrite1h ?? 0) }),
  output: a.output + b.output,
});

/** Prints the session; exit 0, or 1 when the data folder has no sessions file. */
export async function inspect(args: InspectArgs & { out: (text: string) => void; err: (text: string) => void }): Promise<number> {
  const file = sessionsFile(args.dataDir);
  if (!existsSync(file)) {
    args.err(`context-host: no sessions in ${args.dataDir}`);
    return 1;
  }
  const store = new SqliteSessionStore(file);
  try {
    const session = await store.session(args.sessionId);
    const messages = await store.messages(args.sessionId);
    const total = messages.reduce((sum, message) => (message.usage === undefined ? sum : add(sum, message.usage)), zero);
    const row = priceOf(session.model);
    const usd = row === undefined ? undefined : costOf(total, row.price);
    if (args.json) {
      args.out(JSON.stringify({ session, messages, total, usd: usd ?? null }, null, 2));
      return 0;
    }
    args.out(`session ${session.id}: ${session.provider}/${session.model} in ${session.location}`);
    for (const message of messages) {
      const usage = message.usage;
      const counts =
        usage === undefined
          ? ""
          : `  [in ${usage.input}, cache read ${usage.cacheRead}, cache write ${usage.cacheWrite}, out ${usage.output}]`;
      const text = message.text.length > 70 ? `${message.text.slice(0, 69)}…` : message.text;
      args.out(`${String(message.seq).padStart(4)} ${message.role.padEnd(13)} ${JSON.stringify(text)}${counts}`);
    }
    args.out(
      `total: in ${total.input}, cache read ${total.cacheRead}, cache write ${total.cacheWrite}, out ${total.output}` +
        (usd === undefined || row === undefined ? "" : `; $${usd.toFixed(4)} at ${row.source} (${row.date})`),
    );
    return 0;
  } finally {
    await store.close();
  }
}
