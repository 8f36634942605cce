// Owns how the command line says what a thrown value was: one line of text, the
// collected errors of an aggregate included.

import { DisposersFailed } from "../../core/index.ts";

/** A thrown value's message; an `AggregateError` or `DisposersFailed` with each collected error's, after `; `. */
export function messageOf(error: unknown): string {
  if (error instanceof AggregateError || error instanceof DisposersFailed)
    return [error.message, ...error.errors.map(messageOf)].join("; ");
  if (error instanceof Error) return error.message;
  try {
    return String(error);
  } catch {
    // A prototype-less object, or one whose toString throws.
    return Object.prototype.toString.call(error);
  }
}
