// Streaming to the caller (decision 123): `host.step(id, { onText })` hears the reply's
// text piece by piece while the provider streams it, from a local recording server; a
// retried attempt starts over; `signal` cancels the call and nothing of the reply is stored.

import { expect } from "chai";
import { anthropicProvider, openAICompatibleProvider, type Provider, StepAborted, scriptedProvider } from "../../core/index.ts";
import { hostsPerTest } from "../session/fixtures.ts";
import { anthropicEventStream, jsonHeaders, openAIEventStream, serverPerTest, sseHeaders } from "./server.ts";

/** An Anthropic stream whose text arrives in `pieces`; without its end when `isCut`. */
function anthropicPieces(pieces: readonly string[], isCut = false): string {
  const events = [
    { type: "message_start", message: { id: "msg_1", type: "message", role: "assistant", content: [], model: "m" } },
    { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
    ...pieces.map((text) => ({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text } })),
    { type: "content_block_stop", index: 0 },
    { type: "message_delta", delta: { stop_reason: "end_turn", stop_sequence: null } },
    { type: "message_stop" },
  ];
  return anthropicEventStream(isCut ? events.slice(0, 2 + pieces.length) : events);
}

const openAIPieces = (pieces: readonly string[]) =>
  openAIEventStream([
    ...pieces.map((content) => ({
      id: "c",
      object: "chat.completion.chunk",
      model: "m",
      choices: [{ index: 0, delta: { content } }],
    })),
    { id: "c", object: "chat.completion.chunk", model: "m", choices: [{ index: 0, delta: {}, finish_reason: "stop" }] },
  ]);

describe("streaming a reply to the caller of step", () => {
  const { server, serve, recordedWaits } = serverPerTest();
  const { startSession } = hostsPerTest();

  async function session(provider: Provider) {
    const { host, id } = await startSession(provider, {});
    await host.prompt(id, "Tell me about the tides");
    return { host, id };
  }

  it("an Anthropic stream reaches onText piece by piece, in order, and the pieces make the reply", async () => {
    await serve(() => ({
      headers: sseHeaders,
      chunks: ["", ...anthropicPieces(["High ", "tide ", "at six."]).split(/(?<=\n\n)/)],
    }));
    const { host, id } = await session(anthropicProvider({ apiKey: "k", baseURL: server.url }));
    const heard: Array<[string, number]> = [];
    const settled = await host.step(id, { onText: (text, attempt) => heard.push([text, attempt]) });
    expect(heard).to.deep.equal([
      ["High ", 1],
      ["tide ", 1],
      ["at six.", 1],
    ]);
    expect(settled.kind === "replied" && settled.reply.text).to.equal("High tide at six.");
  });

  it("an OpenAI-compatible stream reaches onText piece by piece too", async () => {
    await serve(() => ({ headers: sseHeaders, body: openAIPieces(["Low ", "tide."]) }));
    const { host, id } = await session(openAICompatibleProvider({ apiKey: "k", baseURL: server.url }));
    const heard: string[] = [];
    await host.step(id, { onText: (text) => heard.push(text) });
    expect(heard).to.deep.equal(["Low ", "tide."]);
  });

  it("a reply that is not streamed (JSON, or the scripted provider) arrives in one piece", async () => {
    await serve(() => ({
      headers: jsonHeaders,
      body: JSON.stringify({
        id: "msg_1",
        type: "message",
        role: "assistant",
        model: "m",
        content: [{ type: "text", text: "All at once." }],
        stop_reason: "end_turn",
        usage: { input_tokens: 1, output_tokens: 1 },
      }),
    }));
    const http = await session(anthropicProvider({ apiKey: "k", baseURL: server.url, stream: false }));
    const heard: string[] = [];
    await http.host.step(http.id, { onText: (text) => heard.push(text) });
    const scripted = await session(scriptedProvider([{ text: "Scripted." }]));
    await scripted.host.step(scripted.id, { onText: (text) => heard.push(text) });
    expect(heard).to.deep.equal(["All at once.", "Scripted."]);
  });

  it("a stream cut off is retried: the second attempt's text starts over, told apart by its attempt number", async () => {
    await serve((index) =>
      index === 0
        ? { headers: sseHeaders, body: anthropicPieces(["Hig"], true) }
        : { headers: sseHeaders, body: anthropicPieces(["High ", "tide."]) },
    );
    const { host, id } = await session(anthropicProvider({ apiKey: "k", baseURL: server.url, ...recordedWaits }));
    const heard: Array<[string, number]> = [];
    const result = await host.step(id, { onText: (text, attempt) => heard.push([text, attempt]) });
    expect(heard).to.deep.equal([
      ["Hig", 1],
      ["High ", 2],
      ["tide.", 2],
    ]);
    expect(result.kind === "replied" && result.reply.text).to.equal("High tide.");
  });

  // The first attempt stalls after its first piece: onText hears text before the stream ends.
  it("aborting mid-stream rejects step with StepAborted: no reply is stored, and the next step sends the same request again", async () => {
    await serve((index) =>
      index === 0
        ? {
            headers: sseHeaders,
            chunks: anthropicPieces(["High ", "tide ", "at six."])
              .split(/(?<=\n\n)/)
              .slice(0, 3),
            stall: true,
          }
        : { headers: sseHeaders, body: anthropicPieces(["High tide at six."]) },
    );
    const { host, id } = await session(anthropicProvider({ apiKey: "k", baseURL: server.url }));
    const controller = new AbortController();
    const heard: string[] = [];
    const step = host.step(id, {
      signal: controller.signal,
      onText: (text) => {
        heard.push(text);
        controller.abort();
      },
    });
    let error: unknown;
    await step.catch((e: unknown) => {
      error = e;
    });
    expect(error).to.be.instanceOf(StepAborted);
    expect((error as Error).message)
      .to.contain(id)
      .and.contain("the next step sends the request again");
    expect(heard).to.deep.equal(["High "]);
    // The boundary stays admitted (the prompt is in history); no assistant message.
    expect((await host.messages(id)).map((m) => m.role)).to.deep.equal(["user"]);
    const again = await host.step(id);
    expect(again.kind === "replied" && again.reply.text).to.equal("High tide at six.");
    expect(server.requests).to.have.length(2);
    expect(server.requests[1]?.body).to.equal(server.requests[0]?.body);
  });

  it("a step whose signal is already aborted gets no reply and stores nothing of one", async () => {
    const provider = scriptedProvider();
    const { host, id } = await session(provider);
    const error = await host.step(id, { signal: AbortSignal.abort() }).catch((e: unknown) => e);
    expect(error).to.be.instanceOf(StepAborted);
    expect((await host.messages(id)).map((m) => m.role)).to.deep.equal(["user"]);
    expect((await host.step(id)).kind).to.equal("replied");
  });

  it("onRequest is called with the request once the boundary is admitted, before any text", async () => {
    const provider = scriptedProvider([{ text: "Hello." }]);
    const { host, id } = await session(provider);
    const order: string[] = [];
    await host.step(id, {
      onRequest: async (request) => {
        order.push(`request ${request.messages.length}`);
        // The boundary is admitted: the prompt is already durable history.
        order.push(`history ${(await host.messages(id)).map((m) => m.role).join(",")}`);
      },
      onText: (text) => order.push(`text ${text}`),
    });
    expect(order).to.deep.equal(["request 1", "history user", "text Hello."]);
  });

  it("an onText that throws loses nothing: the reply is stored", async () => {
    const { host, id } = await session(scriptedProvider([{ text: "Kept." }]));
    const result = await host.step(id, {
      onText: () => {
        throw new Error("display broke");
      },
    });
    expect(result.kind === "replied" && result.reply.text).to.equal("Kept.");
    expect((await host.messages(id)).map((m) => m.text)).to.deep.equal(["Tell me about the tides", "Kept."]);
  });
});
