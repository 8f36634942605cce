// Owns Server-Sent Events parsing (the WHATWG event-stream format) for streaming
// replies: bytes in, one `{ event, data }` per dispatched event out. Both provider APIs
// stream this way; what an event means is each reply reader's business.

/** One dispatched event. `event` is `"message"` when the stream names none. */
export interface ServerSentEvent {
  readonly event: string;
  readonly data: string;
}

/**
 * Parses an event stream. Lines end in LF, CRLF or CR, even when split across chunks;
 * `:` lines are comments; `data` lines join with LF; an event is dispatched at a blank
 * line when it has data. At the end of the stream an unfinished event — one whose blank
 * line never came, including a last line without its line end — is discarded, as the
 * WHATWG event-stream rules require: a stream closed mid-frame then reads as broken off
 * (retried), not as a malformed reply.
 */
export async function* readServerSentEvents(body: AsyncIterable<Uint8Array>): AsyncGenerator<ServerSentEvent> {
  const decoder = new TextDecoder();
  let pending = "";
  let event = "";
  let data: string[] = [];
  let isFirstLine = true;

  function* takeLine(line: string): Generator<ServerSentEvent> {
    if (isFirstLine && line.startsWith("\uFEFF")) line = line.slice(1);
    isFirstLine = false;
    if (line === "") {
      if (data.length > 0) yield { event: event === "" ? "message" : event, data: data.join("\n") };
      event = "";
      data = [];
      return;
    }
    if (line.startsWith(":")) return;
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") event = value;
    else if (field === "data") data.push(value);
    // `id` and `retry` concern reconnection, which a provider call never does.
  }

  function* takeLines(isFinal: boolean): Generator<ServerSentEvent> {
    for (;;) {
      const end = pending.search(/\r\n|\r|\n/);
      if (end === -1) break;
      // A CR at the very end may be the first half of a CRLF still in flight.
      if (!isFinal && pending[end] === "\r" && end === pending.length - 1) break;
      const terminator = pending.startsWith("\r\n", end) ? 2 : 1;
      const line = pending.slice(0, end);
      pending = pending.slice(end + terminator);
      yield* takeLine(line);
    }
  }

  for await (const chunk of body) {
    pending += decoder.decode(chunk, { stream: true });
    yield* takeLines(false);
  }
  pending += decoder.decode();
  yield* takeLines(true);
  // Whatever is left — a line without its end, an event without its blank line — is discarded.
}
