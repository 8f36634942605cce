// Owns reading a stored message back: the row both stores keep (JSON text columns), and
// its checks, so a message the SQLite and the PostgreSQL store return is the same record
// and a corrupt row is the same `SessionCorrupt` in either.

import Type from "typebox";
import { Compile } from "typebox/compile";
import { SessionCorrupt } from "../errors.ts";
import {
  type ProviderContent,
  ProviderContentSchema,
  type TokenUsage,
  TokenUsageSchema,
  type ToolCall,
  ToolCallSchema,
} from "../provider.ts";
import type { MessageRole, StoredMessage } from "./store.ts";

/** A `messages` row as both stores select it. */
export interface MessageRow {
  seq: number;
  role: string;
  text: string;
  epoch: number;
  data: string | null;
  usage: string | null;
  provider_content: string | null;
}

const MessageData = Compile(
  Type.Object({
    // A tool call's input may be absent (JSON has no `undefined`): it reads back absent.
    toolCalls: Type.Optional(Type.Array(ToolCallSchema)),
    callId: Type.Optional(Type.String()),
    name: Type.Optional(Type.String()),
  }),
);
const UsageData = Compile(TokenUsageSchema);
const ProviderContentData = Compile(ProviderContentSchema);

const roles: ReadonlySet<string> = new Set(["user", "assistant", "tool", "system-update", "summary"]);

/** A JSON column of a message row, checked against `schema`; `undefined` when NULL. */
function column(id: string, row: MessageRow, name: "usage" | "provider_content", schema: { Check(value: unknown): boolean }) {
  const text = row[name];
  if (text === null || text === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (cause) {
    throw new SessionCorrupt({ sessionId: id, reason: `message ${row.seq} has unreadable ${name}`, cause });
  }
  if (!schema.Check(value)) throw new SessionCorrupt({ sessionId: id, reason: `message ${row.seq} has malformed ${name}` });
  return value;
}

/** The stored message of a row of session `id`; `SessionCorrupt` naming the message when a column is unreadable. */
export function messageFromRow(id: string, row: MessageRow): StoredMessage {
  if (!roles.has(row.role))
    throw new SessionCorrupt({ sessionId: id, reason: `message ${row.seq} has an unknown role ${JSON.stringify(row.role)}` });
  let data: unknown = {};
  if (row.data !== null) {
    try {
      data = JSON.parse(row.data);
    } catch (cause) {
      throw new SessionCorrupt({ sessionId: id, reason: `message ${row.seq} has unreadable data`, cause });
    }
  }
  if (!MessageData.Check(data)) throw new SessionCorrupt({ sessionId: id, reason: `message ${row.seq} has malformed data` });
  const { toolCalls, callId, name } = data as { toolCalls?: ToolCall[]; callId?: string; name?: string };
  const usage = column(id, row, "usage", UsageData) as TokenUsage | undefined;
  const providerContent = column(id, row, "provider_content", ProviderContentData) as ProviderContent | undefined;
  return {
    seq: row.seq,
    role: row.role as MessageRole,
    text: row.text,
    epoch: row.epoch,
    ...(toolCalls === undefined ? {} : { toolCalls }),
    ...(callId === undefined ? {} : { callId }),
    ...(name === undefined ? {} : { name }),
    ...(usage === undefined ? {} : { usage }),
    ...(providerContent === undefined ? {} : { providerContent }),
  };
}
