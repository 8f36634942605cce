// Owns the scripted provider: a deterministic Provider for tests and demos. It
// records every request and answers from a script, so sessions can be replayed.

import type { Provider, ProviderReply, ProviderRequest } from "../session/provider.ts";

/** A scripted turn: a fixed reply, or one computed from the request. */
export type ScriptedTurn = ProviderReply | ((request: ProviderRequest) => ProviderReply | Promise<ProviderReply>);

/** A deterministic provider that records requests. */
export interface ScriptedProvider extends Provider {
  /** Every request received, in order (including failed attempts). */
  readonly requests: ProviderRequest[];
  /** Makes the next `count` calls fail with `error` (after recording the request). */
  failNext(count: number, error?: Error): void;
}

/**
 * A provider that answers from `script` in order and, once it is used up (or
 * without one), echoes the last user text: `reply N: <text>`.
 */
export function scriptedProvider(script: readonly ScriptedTurn[] = []): ScriptedProvider {
  const requests: ProviderRequest[] = [];
  let failures: Array<Error> = [];
  let turn = 0;
  return {
    requests,
    failNext(count, error = new Error("scripted provider failure")) {
      failures = [...failures, ...Array.from({ length: count }, () => error)];
    },
    async send(request, options = {}) {
      requests.push(structuredClone(request) as ProviderRequest);
      options.signal?.throwIfAborted();
      const failure = failures.shift();
      if (failure !== undefined) throw failure;
      const next = script[turn];
      turn += 1;
      const lastUser = [...request.messages].reverse().find((m) => m.role === "user");
      const reply =
        next === undefined
          ? { text: `reply ${turn}: ${lastUser?.role === "user" ? lastUser.text : ""}` }
          : typeof next === "function"
            ? await next(request)
            : next;
      // Not streamed: the text arrives in one piece.
      if (reply.text !== "") options.onText?.(reply.text, 1);
      return reply;
    },
  };
}
