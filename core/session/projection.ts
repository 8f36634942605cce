// Owns the projection of durable history into what the model sees in one epoch:
// history from the latest compaction summary on, without Mid-Conversation System
// Messages of earlier epochs (they stay durable, as audit history).

import type { ProviderRequest, RequestMessage } from "./provider.ts";
import type { EpochRecord, StoredMessage } from "./store/store.ts";

/** The model-visible history of the active epoch, in chronological order. */
export function projectHistory(messages: readonly StoredMessage[], epoch: EpochRecord): RequestMessage[] {
  // A summary takes effect with the epoch it opened. One written in the active epoch
  // (its compaction still due, e.g. blocked by unavailable context) is not projected yet:
  // the epoch goes on with the history its snapshot was admitted against.
  let start = 0;
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i] as StoredMessage;
    if (message.role === "summary" && message.seq < epoch.startedSeq) {
      start = i;
      break;
    }
  }
  const projected: RequestMessage[] = [];
  for (let i = start; i < messages.length; i++) {
    const message = projectMessage(messages[i] as StoredMessage, epoch);
    if (message !== undefined) projected.push(message);
  }
  return projected;
}

/**
 * One stored message as the model sees it in `epoch`, or `undefined` when it is not
 * projected there (a Mid-Conversation System Message of another epoch, a summary that has
 * not taken effect). Messages before the latest effective summary are `projectHistory`'s to drop.
 */
export function projectMessage(message: StoredMessage, epoch: EpochRecord): RequestMessage | undefined {
  switch (message.role) {
    case "user":
      return { role: "user", text: message.text };
    case "summary":
      return message.seq < epoch.startedSeq ? { role: "summary", text: message.text } : undefined;
    case "system-update":
      return message.epoch === epoch.number ? { role: "system-update", text: message.text } : undefined;
    case "assistant":
      return {
        role: "assistant",
        text: message.text,
        ...(message.toolCalls === undefined ? {} : { toolCalls: message.toolCalls }),
        ...(message.providerContent === undefined ? {} : { providerContent: message.providerContent }),
      };
    case "tool":
      return { role: "tool", callId: message.callId ?? "", name: message.name ?? "", result: message.text };
  }
}

/**
 * The request of a boundary from its projected history: host system prompt, then the
 * Baseline, then the messages. The prompt the epoch began with is kept for the whole epoch
 * (it is part of the cache prefix); `hostSystemPrompt` is used only for epochs that did not record one.
 */
export function requestOf(
  session: { id?: string; provider: string; model: string },
  hostSystemPrompt: string | undefined,
  epoch: EpochRecord,
  projected: readonly RequestMessage[],
): ProviderRequest {
  const systemPrompt = epoch.systemPrompt === undefined ? hostSystemPrompt : (epoch.systemPrompt ?? undefined);
  return {
    provider: session.provider,
    model: session.model,
    system: systemPrompt === undefined ? [epoch.baseline] : [systemPrompt, epoch.baseline],
    messages: projected,
    ...(session.id === undefined ? {} : { sessionId: session.id }),
    epoch: { number: epoch.number, reason: epoch.reason },
  };
}
