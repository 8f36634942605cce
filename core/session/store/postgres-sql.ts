// Owns the PostgreSQL store's statements (decision 171): what a boundary reads in one
// statement, and one commit's writes as one statement built from the parts it has, each a
// prepared statement named by its shape.

import { SessionCorrupt } from "../errors.ts";
import type { SessionHead, Writes } from "./commit-plan.ts";
import { type EpochRow, epochFrom } from "./epoch-rows.ts";
import type { MessageRow, SessionRow } from "./rows.ts";
import type { EpochRecord, PendingPrompt } from "./store.ts";

/** A session's row as a boundary reads it, with its pending input, what was appended and its epoch when not held. */
export interface BoundaryRow extends SessionRow, HeadColumns {
  /** The pending prompts, oldest first (JSON, parsed by pg); null when none. */
  pending: PendingPrompt[] | null;
  /** The messages after the seq asked for (JSON, parsed by pg); null when none. */
  appended: MessageRow[] | null;
  epoch_row: EpochColumns | null;
}

/** The head's columns of a session's row. */
export interface HeadColumns {
  revision: number;
  last_seq: number;
  epoch: number;
  snapshot_version: number;
}

/** The active epoch's columns, read only when the store does not hold its state. */
export interface EpochColumns extends EpochRow {
  /** The snapshot's keys and, in the same order, their entries' JSON. */
  keys: string[];
  entries: string[];
}

/** Epoch `number` of session `id` from its columns; `SessionCorrupt` when unreadable. */
export function epochOf(id: string, number: number, columns: EpochColumns): EpochRecord {
  if (columns.keys.length !== columns.entries.length)
    throw new SessionCorrupt({ sessionId: id, reason: `the Context Snapshot of epoch ${number} was read apart` });
  return epochFrom(
    id,
    number,
    columns,
    columns.keys.map((key, i) => [key, columns.entries[i] as string] as const),
  );
}

/**
 * The active epoch's columns as one JSON value, when the session's state is not the one
 * held (`$2`, `$3`: the held number and version) — a CASE evaluates its branch only when taken.
 */
export const epochColumns = `CASE WHEN s.epoch > 0 AND (s.epoch IS DISTINCT FROM $2::integer OR s.snapshot_version IS DISTINCT FROM $3::integer) THEN
     (SELECT json_build_object('baseline', e.baseline, 'started_seq', e.started_seq, 'reason', e.reason,
        'system_prompt', e.system_prompt, 'marked', e.snapshot_version,
        'keys', ARRAY(SELECT k.key FROM snapshot_entries k WHERE k.session_id = s.id AND k.epoch = e.number ORDER BY k.key),
        'entries', ARRAY(SELECT k.entry FROM snapshot_entries k WHERE k.session_id = s.id AND k.epoch = e.number ORDER BY k.key))
      FROM epochs e WHERE e.session_id = s.id AND e.number = s.epoch) END AS epoch_row`;

/** A session's head and its active epoch when not held (`$2`, `$3`). */
export const readHeadSql = `SELECT s.revision, s.last_seq, s.epoch, s.snapshot_version, ${epochColumns} FROM sessions s WHERE s.id = $1`;

/**
 * What a boundary reads of a session's row `s`: the row, its pending input (with `more`
 * pending rows of the same statement), its messages after `$4` and its epoch when not held.
 */
const boundaryColumns = (more: string) => `s.*,
     (SELECT json_agg(json_build_object('id', p.id, 'text', p.text) ORDER BY p.id) FROM
       (SELECT id, text FROM pending_prompts WHERE session_id = s.id AND promoted_seq IS NULL${more}) p) AS pending,
     CASE WHEN s.last_seq > $4 THEN
       (SELECT json_agg(json_build_object('seq', m.seq, 'role', m.role, 'text', m.text, 'epoch', m.epoch, 'data', m.data,
          'usage', m.usage, 'provider_content', m.provider_content) ORDER BY m.seq)
        FROM messages m WHERE m.session_id = s.id AND m.seq > $4) END AS appended,
     ${epochColumns}`;

/** One boundary's read (decision 171): the session's row, its pending input, its messages after `$4` and its epoch when not held. */
export const readBoundarySql = `SELECT ${boundaryColumns("")} FROM sessions s WHERE s.id = $1`;

/**
 * A prompt (`$5`) added to a session and, in the same statement, the boundary's read that
 * the step after it will take (decision 178). The statement's reads do not see its own
 * insert, so the prompt joins the pending ones from the insert's result.
 */
export const addPromptReadingSql = `WITH added AS (
     INSERT INTO pending_prompts (session_id, text) SELECT id, $5 FROM sessions WHERE id = $1 RETURNING id, text)
   SELECT ${boundaryColumns(" UNION ALL SELECT id, text FROM added")} FROM sessions s WHERE s.id = $1`;

/** A statement and its values, prepared under `name`. */
export interface Statement {
  readonly name: string;
  readonly text: string;
  readonly values: unknown[];
}

/**
 * One commit's writes as one statement: the session's row advanced if it is still at the
 * revision read (and, when prompts are promoted, each is pending in this session and listed
 * once), and only then the parts the writes have: the epoch, its entries, the promoted
 * prompts and the messages. The result says whether the row was claimed, and the revision
 * it was at.
 */
export function applyStatement(id: string, writes: Writes): Statement {
  const { head, lease, seen, where, newEpoch, entries, messages, promote } = writes;
  const values: unknown[] = [];
  const p = (value: unknown, type: string) => {
    values.push(value);
    return `$${values.length}::${type}`;
  };
  const session = p(id, "text");
  const taken = lease === "kept" ? null : lease;
  const keepsLease = p(lease === "kept", "boolean");
  const promoted =
    promote.length === 0
      ? undefined
      : p(
          promote.map((x) => x.id),
          "integer[]",
        );
  const parts = [
    `claimed AS (
     UPDATE sessions SET revision = ${p(head.revision, "integer")}, last_seq = ${p(head.lastSeq, "integer")},
       epoch = ${p(head.epoch, "integer")}, snapshot_version = ${p(head.snapshotVersion, "integer")},
       awaiting_reply = COALESCE(${p(writes.awaitingReply === "kept" ? null : writes.awaitingReply, "boolean")}, awaiting_reply),
       lease_holder = CASE WHEN ${keepsLease} THEN lease_holder ELSE ${p(taken?.holder ?? null, "text")} END,
       lease_expires = CASE WHEN ${keepsLease} THEN lease_expires ELSE ${p(taken?.expiresAt ?? null, "bigint")} END,
       epoch_due = CASE ${p(writes.epochDue, "text")} WHEN 'settled' THEN NULL WHEN 'compaction' THEN 'compaction' ELSE epoch_due END,
       seen_count = COALESCE(${p(seen?.count ?? null, "integer")}, seen_count),
       seen_digest = COALESCE(${p(seen?.digest ?? null, "text")}, seen_digest),
       location = COALESCE(${p(where?.location ?? null, "text")}, location),
       provider = COALESCE(${p(where?.provider ?? null, "text")}, provider),
       model = COALESCE(${p(where?.model ?? null, "text")}, model)
     WHERE id = ${session} AND revision = ${p(writes.revision, "integer")}${
       promoted === undefined
         ? ""
         : `
       AND (SELECT count(*) FROM pending_prompts
             WHERE session_id = ${session} AND promoted_seq IS NULL AND id = ANY(${promoted})) = cardinality(${promoted})
       AND cardinality(ARRAY(SELECT DISTINCT unnest(${promoted}))) = cardinality(${promoted})`
     }
     RETURNING id)`,
  ];
  const shape: string[] = [];
  if (newEpoch !== undefined) {
    shape.push("e");
    parts.push(`new_epoch AS (
     INSERT INTO epochs (session_id, number, baseline, started_seq, reason, system_prompt)
       SELECT ${session}, ${p(newEpoch.number, "integer")}, ${p(newEpoch.baseline, "text")}, ${p(newEpoch.startedSeq, "integer")},
         ${p(newEpoch.reason, "text")}, ${p(newEpoch.systemPrompt, "text")} FROM claimed)`);
  }
  if (entries.keys.length > 0) {
    shape.push("u");
    parts.push(`upserted AS (
     INSERT INTO snapshot_entries (session_id, epoch, key, entry)
       SELECT ${session}, ${p(entries.epoch, "integer")}, u.key, u.entry
       FROM claimed, unnest(${p(entries.keys, "text[]")}, ${p(entries.entries, "text[]")}) AS u(key, entry)
     ON CONFLICT (session_id, epoch, key) DO UPDATE SET entry = EXCLUDED.entry)`);
  }
  if (entries.removed.length > 0) {
    shape.push("r");
    parts.push(`removed AS (
     DELETE FROM snapshot_entries WHERE session_id = ${session} AND epoch = ${p(entries.epoch, "integer")}
       AND key = ANY(${p(entries.removed, "text[]")}) AND EXISTS (SELECT 1 FROM claimed))`);
  }
  if (promote.length > 0) {
    shape.push("p");
    parts.push(`promoted AS (
     UPDATE pending_prompts x SET promoted_seq = u.seq
       FROM claimed, unnest(${promoted}, ${p(
         promote.map((x) => x.seq),
         "integer[]",
       )}) AS u(id, seq)
       WHERE x.id = u.id AND x.session_id = ${session} AND x.promoted_seq IS NULL)`);
  }
  if (messages.length > 0) {
    shape.push("m");
    const column = <K extends keyof MessageRow>(key: K, type: string) =>
      p(
        messages.map((m) => m[key]),
        type,
      );
    parts.push(`appended AS (
     INSERT INTO messages (session_id, seq, role, text, epoch, data, usage, provider_content)
       SELECT ${session}, u.seq, u.role, u.text, u.epoch, u.data, u.usage, u.provider_content
       FROM claimed, unnest(${column("seq", "integer[]")}, ${column("role", "text[]")}, ${column("text", "text[]")},
         ${column("epoch", "integer[]")}, ${column("data", "text[]")}, ${column("usage", "text[]")},
         ${column("provider_content", "text[]")}) AS u(seq, role, text, epoch, data, usage, provider_content))`);
  }
  return {
    name: `context-host-apply-${promoted === undefined ? "" : "c"}${shape.join("")}`,
    text: `WITH ${parts.join(",\n   ")}
   SELECT (SELECT count(*) FROM claimed)::integer AS claimed, (SELECT revision FROM sessions WHERE id = ${session}) AS revision`,
    values,
  };
}

/** A session's head from its row's columns (INTEGER columns arrive as numbers). */
export function headOf(row: HeadColumns): SessionHead {
  return { revision: row.revision, lastSeq: row.last_seq, epoch: row.epoch, snapshotVersion: row.snapshot_version };
}
