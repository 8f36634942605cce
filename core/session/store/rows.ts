// Owns reading a session's rows back, the same in both stores: its session row as the
// record the runtime sees (SQLite keeps booleans as 0/1, PostgreSQL's BIGINT arrives as a
// string), and its messages (JSON text columns) with their checks, so a message the SQLite
// and the PostgreSQL store return is the same record and a corrupt row is the same
// `SessionCorrupt` in either.

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
import type { EpochReason, MessageRole, SessionRecord, StoredMessage } from "./store.ts";

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
    position: Type.Optional(Type.Integer({ minimum: 0 })),
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
  const { toolCalls, callId, name, position } = data as {
    toolCalls?: ToolCall[];
    callId?: string;
    name?: string;
    position?: number;
  };
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
    ...(position === undefined ? {} : { position }),
  };
}

/** A message's row as stored: its data, usage and provider content as JSON. */
export function messageRow(
  seq: number,
  role: MessageRole,
  text: string,
  epoch: number,
  data?: { toolCalls?: readonly ToolCall[]; callId?: string; name?: string; position?: number },
  reply?: { usage?: TokenUsage | undefined; providerContent?: ProviderContent | undefined },
): MessageRow {
  return {
    seq,
    role,
    text,
    epoch,
    data: data === undefined ? null : JSON.stringify(data),
    usage: reply?.usage === undefined ? null : JSON.stringify(reply.usage),
    provider_content: reply?.providerContent === undefined ? null : JSON.stringify(reply.providerContent),
  };
}

/** A `sessions` row as both stores select it. */
export interface SessionRow {
  id: string;
  location: string;
  provider: string;
  model: string;
  revision: number;
  epoch_due: EpochReason | null;
  awaiting_reply: number | boolean;
  lease_holder: string | null;
  lease_expires: number | string | null;
  seen_count: number | null;
  seen_digest: string | null;
}

/** A session as the runtime sees it, from its row. */
export function sessionFrom(row: SessionRow): SessionRecord {
  return {
    id: row.id,
    location: row.location,
    provider: row.provider,
    model: row.model,
    revision: row.revision,
    epochDue: row.epoch_due ?? undefined,
    isAwaitingReply: row.awaiting_reply === true || row.awaiting_reply === 1,
    ...(row.lease_holder === null || row.lease_expires === null
      ? {}
      : { lease: { holder: row.lease_holder, expiresAt: Number(row.lease_expires) } }),
    ...(row.seen_count === null || row.seen_digest === null ? {} : { seen: { count: row.seen_count, digest: row.seen_digest } }),
  };
}
