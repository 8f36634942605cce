// Owns `storedRequests`: the provider requests a stored session's epoch sent, rebuilt from
// its durable history the way the runtime projects it (what `context-host inspect --model`
// replays through the cache model).

import { projectHistory, requestOf } from "../session/projection.ts";
import type { ProviderRequest } from "../session/provider.ts";
import type { EpochRecord, SessionRecord, StoredMessage } from "../session/store/store.ts";

/**
 * The requests `epoch` sent, oldest first: for each reply stored in the epoch, the request it
 * answered (the epoch's system parts and the history projected up to it), then the request
 * the next step would send when the history does not end with a reply. `messages` is the
 * session's whole history (`store.messages(id)`), `epoch` one of its epochs, normally the
 * active one (`store.activeEpoch(id)`).
 */
export function storedRequests(
  session: Pick<SessionRecord, "id" | "provider" | "model">,
  messages: readonly StoredMessage[],
  epoch: EpochRecord,
): ProviderRequest[] {
  const request = (before: readonly StoredMessage[]) => requestOf(session, undefined, epoch, projectHistory(before, epoch));
  const requests = messages.flatMap((message, index) =>
    message.role === "assistant" && message.seq >= epoch.startedSeq ? [request(messages.slice(0, index))] : [],
  );
  if (messages.at(-1)?.role !== "assistant") requests.push(request(messages));
  return requests;
}
