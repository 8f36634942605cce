// Shared by the crash worker and its checker: the worker's Context Sources, the exact
// text they render, and how that text is parsed back.
//
// Every rendering states a source's whole newly effective value, so the checker can
// replay an epoch: start from its Baseline, apply its Mid-Conversation System Messages
// in order, and the result must be exactly the epoch's stored Context Snapshot. A
// message committed without its snapshot advance (or the reverse) breaks that equality.

import { createHash } from "node:crypto";
import path from "node:path";
import { canonicalJson, type Json } from "../../../core/system-context/index.ts";
import { seededRandom } from "../../../scripts/bench/measure.ts";

/** How many Context Sources the worker composes, in this order. */
export const sourceCount = 8;

/** Sources grouped into core registrations (several sources per registration). */
export const groupSize = 3;

/** The key of source `i`. */
export function sourceKey(i: number): string {
  return `crash/s${i}`;
}

/**
 * Whether source `i` has a removal renderer. The others escalate to a replacement
 * (a new epoch) when they turn absent after admission (SPEC section 2, rule 7).
 */
export function isRemovable(i: number): boolean {
  return i % 3 !== 2;
}

/** Text of a source's effective value: its baseline and update rendering. */
export function renderSet(key: string, value: Json): string {
  return `SET ${key} ${canonicalJson(value)}`;
}

/** Text of a source that no longer applies: its removal rendering. */
export function renderDel(key: string): string {
  return `DEL ${key}`;
}

/** One parsed part of a Baseline or Mid-Conversation System Message. */
export type Part =
  | { readonly op: "set"; readonly key: string; readonly json: string }
  | { readonly op: "del"; readonly key: string };

const setPattern = /^SET (crash\/s\d+) (.+)$/s;
const delPattern = /^DEL (crash\/s\d+)$/;

/** Parses a rendered text (parts joined by a blank line); throws on anything the sources cannot have rendered. */
export function parseParts(text: string): Part[] {
  if (text === "") return [];
  return text.split("\n\n").map((chunk) => {
    const set = setPattern.exec(chunk);
    if (set !== null) {
      const json = set[2] as string;
      const canonical = canonicalJson(JSON.parse(json) as Json);
      if (canonical !== json) throw new Error(`not canonical JSON: ${chunk.slice(0, 80)}`);
      return { op: "set", key: set[1] as string, json };
    }
    const del = delPattern.exec(chunk);
    if (del !== null) return { op: "del", key: del[1] as string };
    throw new Error(`unparseable part: ${JSON.stringify(chunk.slice(0, 80))}`);
  });
}

/** The file a worker writes its events to, one line each; the harness reads it after the kill. */
export function eventsFile(dataDir: string, tag: string): string {
  return path.join(dataDir, `events-${tag}.log`);
}

/** The worker's event lines (READY also on stdout); the harness reads the last ones after the kill. */
export const marks = {
  ready: "READY",
  prompt: "P",
  sent: "S",
  commitStart: "C>",
  commitEnd: "C<",
} as const;

/** A deterministic pseudo-random generator (mulberry32), shared with the benches. */
export const random = seededRandom;

/** Hex sha256 of a text. */
export function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}
