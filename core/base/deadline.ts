// Owns the deadline: work that must settle within a time, or fail with a named error.
// The timer never keeps the process alive.

import { ContextHostError } from "./errors.ts";

// Taken when this module loads, before any plugin code runs: in a plugin's worker, a plugin
// that replaces the global timers does not disable the deadlines of its own sources.
const { setTimeout: startTimer, clearTimeout: stopTimer } = globalThis;

/** Work that did not settle before its deadline. `what` names it ("loader core/date", "setup"). */
export class DeadlineExceeded extends ContextHostError {
  readonly what: string;
  readonly ms: number;
  constructor(options: { readonly what: string; readonly ms: number }) {
    super(`${options.what} missed its deadline of ${options.ms} ms`);
    this.what = options.what;
    this.ms = options.ms;
  }
}

/** Runs `work` (sync throws become rejections) and rejects with `DeadlineExceeded` after `ms`. */
export function withinDeadline<T>(work: () => T | Promise<T>, ms: number, what: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = startTimer(() => reject(new DeadlineExceeded({ what, ms })), ms);
    timer.unref();
    Promise.resolve()
      .then(work)
      .then(
        (value) => {
          stopTimer(timer);
          resolve(value);
        },
        (error) => {
          stopTimer(timer);
          reject(error);
        },
      );
  });
}
