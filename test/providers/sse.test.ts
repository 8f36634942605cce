// Server-Sent Events parsing: frames split anywhere still yield the same events.

import { expect } from "chai";
import { readServerSentEvents, type ServerSentEvent } from "../../core/providers/sse.ts";

async function parse(pieces: readonly string[]): Promise<ServerSentEvent[]> {
  const encoder = new TextEncoder();
  async function* bytes() {
    for (const piece of pieces) yield encoder.encode(piece);
  }
  const events: ServerSentEvent[] = [];
  for await (const event of readServerSentEvents(bytes())) events.push(event);
  return events;
}

const stream =
  'event: content_block_delta\ndata: {"a":1}\n\n: a comment\n\ndata: first\ndata: second\n\nevent: ping\ndata:{}\n\n';
const expected: ServerSentEvent[] = [
  { event: "content_block_delta", data: '{"a":1}' },
  { event: "message", data: "first\nsecond" },
  { event: "ping", data: "{}" },
];

describe("Server-Sent Events", () => {
  it("parses named events, unnamed events, multi-line data and comments", async () => {
    expect(await parse([stream])).to.deep.equal(expected);
  });

  it("yields the same events however the bytes are split", async () => {
    for (let size = 1; size <= 7; size++) {
      const pieces = Array.from({ length: Math.ceil(stream.length / size) }, (_, i) => stream.slice(i * size, (i + 1) * size));
      expect(await parse(pieces), `pieces of ${size}`).to.deep.equal(expected);
    }
  });

  it("accepts CRLF and CR line endings, even a CRLF split across chunks", async () => {
    expect(await parse(["data: a\r", "\n\r", "\ndata: b\r\r"])).to.deep.equal([
      { event: "message", data: "a" },
      { event: "message", data: "b" },
    ]);
  });

  it("decodes UTF-8 split inside a character", async () => {
    const bytes = new TextEncoder().encode("data: é✓\n\n");
    async function* split() {
      for (const byte of bytes) yield Uint8Array.of(byte);
    }
    const events: ServerSentEvent[] = [];
    for await (const event of readServerSentEvents(split())) events.push(event);
    expect(events).to.deep.equal([{ event: "message", data: "é✓" }]);
  });

  // WHATWG HTML, "Parsing an event stream": once the end of the file is reached, pending
  // data is discarded; a stream that ends mid-event does not dispatch that event.
  it("discards an event the stream ends before its blank line, however the last line ends", async () => {
    expect(await parse(["data: [DONE]"])).to.deep.equal([]);
    expect(await parse(["data: [DONE]\n"])).to.deep.equal([]);
    expect(await parse(["data: one\n\nevent: message_stop\ndata: {}\r"])).to.deep.equal([{ event: "message", data: "one" }]);
  });
});
