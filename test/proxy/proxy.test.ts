// The context proxy (issue 47, SPEC §9): a client's request, in each of the three wire
// formats, reaches the upstream with the Baseline once per epoch and each change once,
// after the newest user message; everything the client sent stays, in its order.

import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { gzipSync } from "node:zlib";
import { expect } from "chai";
import { canonicalJson } from "../../core/proxy/canonical.ts";
import {
  type ContextProxy,
  type ContextProxyOptions,
  createContextProxy,
  type ProxyBoundaryEvent,
} from "../../core/proxy/proxy.ts";
import { PostgresSessionStore } from "../../core/session/store/postgres.ts";
import { testSource } from "../session/fixtures.ts";
import { describeWithPostgres } from "../session/postgres-server.ts";
import { type FakeUpstream, startFakeUpstream } from "./fake-upstream.ts";

type Json = Record<string, unknown>;

describe("context proxy", () => {
  let dir = "";
  let upstream: FakeUpstream;
  const proxies: ContextProxy[] = [];
  beforeEach(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "proxy-"));
    upstream = await startFakeUpstream();
  });
  afterEach(async () => {
    await Promise.all(proxies.splice(0).map((proxy) => proxy.close()));
    await upstream.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function start(options: ContextProxyOptions = {}): Promise<ContextProxy> {
    const proxy = await createContextProxy({
      builtins: false,
      plugins: [],
      watch: false,
      dataDir: dir,
      location: dir,
      port: 0,
      upstreams: { anthropic: upstream.url, openai: upstream.url },
      ...options,
    });
    proxies.push(proxy);
    return proxy;
  }

  const post = (proxy: ContextProxy, route: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${proxy.url}${route}`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": "sk-one", ...headers },
      body: typeof body === "string" ? body : JSON.stringify(body),
    });
  const sent = (index: number) => upstream.requests[index]?.body as Json;
  const events = (proxy: ContextProxy) => {
    const seen: ProxyBoundaryEvent[] = [];
    proxy.onBoundary((event) => seen.push(event));
    return seen;
  };
  /** Whether `later`'s list extends `earlier`'s, compared without cache markers. */
  const extendsList = (earlier: unknown[], later: unknown[]) =>
    earlier.every((item, index) => canonicalJson(item) === canonicalJson(later[index]));

  describe("Anthropic Messages", () => {
    const user = (text: string) => ({ role: "user", content: text });
    const assistant = (text: string) => ({ role: "assistant", content: [{ type: "text", text }] });
    const body = (messages: unknown[], more: Json = {}) => ({
      model: "claude-opus-4-8",
      max_tokens: 100,
      system: [{ type: "text", text: "You are an agent." }],
      tools: [{ name: "Read", input_schema: { type: "object" } }],
      messages,
      ...more,
    });

    it("the first request carries the Baseline after the client's system blocks, and nothing else changes", async () => {
      const branch = testSource("core/branch", "main");
      const proxy = await start({ core: [branch.core] });
      const response = await post(proxy, "/v1/messages?beta=true", body([user("hi")]));
      expect(response.status).to.equal(200);
      expect(await response.json()).to.have.property("content");
      expect(upstream.requests[0]?.path).to.equal("/v1/messages?beta=true");
      expect(sent(0).system).to.deep.equal([
        { type: "text", text: "You are an agent." },
        { type: "text", text: "core/branch is main" },
      ]);
      expect(sent(0).messages).to.deep.equal([user("hi")]);
      expect(sent(0).tools).to.deep.equal(body([]).tools);
      expect(upstream.requests[0]?.headers["x-api-key"]).to.equal("sk-one");
    });

    it("a change is admitted once, after the newest user message, as a native system message; later requests extend earlier ones", async () => {
      const branch = testSource("core/branch", "main");
      const proxy = await start({ core: [branch.core] });
      const history: unknown[] = [user("hi")];
      await post(proxy, "/v1/messages", body(history));
      history.push(assistant("hello"), user("switch branches"));
      branch.state.value = "feature";
      await post(proxy, "/v1/messages", body(history));
      expect(sent(1).messages).to.deep.equal([
        user("hi"),
        assistant("hello"),
        user("switch branches"),
        { role: "system", content: [{ type: "text", text: "core/branch is now feature" }] },
      ]);
      history.push(assistant("done"), user("and now?"));
      await post(proxy, "/v1/messages", body(history));
      const third = sent(2).messages as unknown[];
      expect(third.filter((message) => (message as Json).role === "system")).to.have.length(1);
      expect(extendsList(sent(1).messages as unknown[], third)).to.equal(true);
      expect(sent(2).system).to.deep.equal(sent(0).system);
    });

    it("a model without native system messages gets the update as <system-update> text in the user turn", async () => {
      const branch = testSource("core/branch", "main");
      const proxy = await start({ core: [branch.core] });
      const history: unknown[] = [user("hi")];
      await post(proxy, "/v1/messages", body(history, { model: "claude-sonnet-4-5" }));
      branch.state.value = "a<b";
      history.push(assistant("hello"), user("next"));
      await post(proxy, "/v1/messages", body(history, { model: "claude-sonnet-4-5" }));
      expect((sent(1).messages as unknown[]).at(-1)).to.deep.equal({
        role: "user",
        content: [
          { type: "text", text: "next" },
          { type: "text", text: "<system-update>core/branch is now a&lt;b</system-update>" },
        ],
      });
    });

    it("a client's trailing system message takes the update first, and its cache breakpoint moves to the newest user turn", async () => {
      const branch = testSource("core/branch", "main");
      const proxy = await start({ core: [branch.core] });
      const environment = (text: string) => ({
        role: "system",
        content: [{ type: "text", text, cache_control: { type: "ephemeral" } }],
      });
      await post(proxy, "/v1/messages", body([user("hi"), environment("git: clean")]));
      expect(sent(0).messages).to.deep.equal([
        { role: "user", content: [{ type: "text", text: "hi", cache_control: { type: "ephemeral" } }] },
        { role: "system", content: [{ type: "text", text: "git: clean" }] },
      ]);
      branch.state.value = "feature";
      await post(proxy, "/v1/messages", body([user("hi"), assistant("hello"), user("go"), environment("git: dirty")]));
      const messages = sent(1).messages as Json[];
      expect(messages.at(-1)).to.deep.equal({
        role: "system",
        content: [
          { type: "text", text: "core/branch is now feature" },
          { type: "text", text: "git: dirty" },
        ],
      });
      expect(messages.at(-2)).to.deep.equal({
        role: "user",
        content: [{ type: "text", text: "go", cache_control: { type: "ephemeral" } }],
      });
      // The client's environment message moved on: the update stays where it was admitted, on its own.
      await post(
        proxy,
        "/v1/messages",
        body([user("hi"), assistant("hello"), user("go"), assistant("ok"), user("more"), environment("x")]),
      );
      expect((sent(2).messages as Json[])[3]).to.deep.equal({
        role: "system",
        content: [{ type: "text", text: "core/branch is now feature" }],
      });
    });

    it("an update admitted on a request that ends with an assistant prefill goes before the prefill, and a retry repeats it", async () => {
      const branch = testSource("core/branch", "main");
      const proxy = await start({ core: [branch.core] });
      await post(proxy, "/v1/messages", body([user("hi")]));
      branch.state.value = "feature";
      const prefilled = body([user("hi"), assistant("hello"), user("list files"), assistant("Here are")]);
      await post(proxy, "/v1/messages", prefilled);
      const update = { role: "system", content: [{ type: "text", text: "core/branch is now feature" }] };
      expect(sent(1).messages).to.deep.equal([user("hi"), assistant("hello"), user("list files"), update, assistant("Here are")]);
      await post(proxy, "/v1/messages", prefilled);
      expect(upstream.requests[2]?.raw).to.equal(upstream.requests[1]?.raw);
    });

    it("a forwarded body holds at most four cache breakpoints", async () => {
      const proxy = await start({ core: [testSource("core/branch", "main").core] });
      const marked = (text: string) => ({
        role: "user",
        content: [{ type: "text", text, cache_control: { type: "ephemeral" } }],
      });
      const system = [{ type: "text", text: "s", cache_control: { type: "ephemeral" } }];
      await post(
        proxy,
        "/v1/messages",
        body([marked("a"), assistant("1"), marked("b"), assistant("2"), marked("c"), assistant("3"), marked("d")], { system }),
      );
      const count = (JSON.stringify(sent(0)).match(/cache_control/g) ?? []).length;
      expect(count).to.equal(4);
      // The earliest went: the latest three user turns keep theirs.
      expect(JSON.stringify((sent(0).messages as Json[])[0])).not.to.contain("cache_control");
      expect(JSON.stringify((sent(0).messages as Json[])[6])).to.contain("cache_control");
    });

    it("moving cache markers or rewriting a string as a text block keeps the conversation and its epoch", async () => {
      const branch = testSource("core/branch", "main");
      const proxy = await start({ core: [branch.core] });
      const seen = events(proxy);
      await post(proxy, "/v1/messages", body([user("hi")]));
      await post(
        proxy,
        "/v1/messages",
        body([
          { role: "user", content: [{ type: "text", text: "hi" }] },
          assistant("hello"),
          { role: "user", content: [{ type: "text", text: "go", cache_control: { type: "ephemeral" } }] },
        ]),
      );
      expect(seen.map((event) => event.sessionId)).to.have.length(2);
      expect(seen[1]?.sessionId).to.equal(seen[0]?.sessionId);
      expect(seen.map((event) => event.epoch?.number)).to.deep.equal([1, 1]);
      expect(seen[1]?.baseline).to.equal(undefined);
    });

    it("a side request with other tools and another opening is its own conversation: the main one keeps its epoch", async () => {
      const branch = testSource("core/branch", "main");
      const proxy = await start({ core: [branch.core] });
      const seen = events(proxy);
      const headers = { "x-claude-code-session-id": "c0ffee" };
      await post(proxy, "/v1/messages", body([user("hi")]), headers);
      await post(
        proxy,
        "/v1/messages",
        { model: "claude-haiku-4-5", max_tokens: 10, messages: [user("Title for: hi")] },
        headers,
      );
      await post(proxy, "/v1/messages", body([user("hi"), assistant("hello"), user("go")]), headers);
      expect(seen[1]?.sessionId).not.to.equal(seen[0]?.sessionId);
      expect(seen[2]?.sessionId).to.equal(seen[0]?.sessionId);
      expect(seen[2]?.epoch).to.deep.equal({ number: 1, reason: "initial" });
      expect(seen[2]?.baseline).to.equal(undefined);
    });

    it("the client's compaction starts a new epoch with a fresh Baseline", async () => {
      const branch = testSource("core/branch", "main");
      const proxy = await start({ core: [branch.core] });
      const seen = events(proxy);
      const headers = { "x-context-host-session": "s1" };
      await post(proxy, "/v1/messages", body([user("hi"), assistant("hello"), user("go")]), headers);
      branch.state.value = "feature";
      // After /compact the conversation restarts from a summary.
      await post(proxy, "/v1/messages", body([user("Summary: we said hi.")]), headers);
      expect(seen[1]?.baseline).to.equal("core/branch is feature");
      expect(sent(1).system).to.deep.equal([
        { type: "text", text: "You are an agent." },
        { type: "text", text: "core/branch is feature" },
      ]);
    });

    it("streams are relayed and their usage is read on the side", async () => {
      const proxy = await start({ core: [testSource("core/branch", "main").core] });
      const seen = events(proxy);
      const response = await post(proxy, "/v1/messages", body([user("hi")], { stream: true }));
      expect(response.headers.get("content-type")).to.equal("text/event-stream");
      const text = await response.text();
      expect(text).to.contain("event: message_stop");
      await until(() => seen.length === 1);
      expect(seen[0]?.usage).to.deep.equal({ input: 12, cacheRead: 30, cacheWrite: 5, output: 3 });
      expect(seen[0]?.outcome).to.equal("relayed");
      expect(seen[0]?.forwarded).to.equal("with-context");
    });
  });

  describe("OpenAI Responses", () => {
    const developer = { type: "message", role: "developer", content: [{ type: "input_text", text: "Be careful." }] };
    const userItem = (text: string) => ({ type: "message", role: "user", content: [{ type: "input_text", text }] });
    const reasoning = { type: "reasoning", id: "rs_1", summary: [], encrypted_content: "gAAAAB-opaque==" };
    const body = (input: unknown[], more: Json = {}) => ({
      model: "gpt-5.6",
      instructions: "You are Codex.",
      input,
      store: false,
      stream: true,
      include: ["reasoning.encrypted_content"],
      prompt_cache_key: "thread-1",
      ...more,
    });

    it("the Baseline follows the client's leading instruction messages; updates follow the newest user message; reasoning is untouched", async () => {
      const branch = testSource("core/branch", "main");
      const proxy = await start({ core: [branch.core] });
      const history: unknown[] = [developer, userItem("hi")];
      await (await post(proxy, "/v1/responses", body(history), { authorization: "Bearer sk-o" })).text();
      expect(sent(0).input).to.deep.equal([
        developer,
        { type: "message", role: "developer", content: [{ type: "input_text", text: "core/branch is main" }] },
        userItem("hi"),
      ]);
      expect(sent(0).instructions).to.equal("You are Codex.");
      history.push(
        reasoning,
        { type: "function_call", call_id: "c1", name: "shell", arguments: "{}" },
        { type: "function_call_output", call_id: "c1", output: "done" },
      );
      branch.state.value = "feature";
      await (await post(proxy, "/v1/responses", body(history), { authorization: "Bearer sk-o" })).text();
      const input = sent(1).input as Json[];
      expect(input[3]).to.deep.equal(reasoning);
      expect(input.at(-1)).to.deep.equal({
        type: "message",
        role: "developer",
        content: [{ type: "input_text", text: "core/branch is now feature" }],
      });
      expect(extendsList(sent(0).input as unknown[], input)).to.equal(true);
      expect(upstream.requests[1]?.raw).to.contain('"encrypted_content":"gAAAAB-opaque=="');
    });

    it("a request that continues a stored response is forwarded unchanged, and says why", async () => {
      const proxy = await start({ core: [testSource("core/branch", "main").core] });
      const seen = events(proxy);
      const raw = JSON.stringify(body([userItem("more")], { previous_response_id: "resp_0", stream: false }));
      await (await post(proxy, "/v1/responses", raw)).json();
      expect(upstream.requests[0]?.raw).to.equal(raw);
      expect(seen[0]?.forwarded).to.equal("unchanged");
      expect(seen[0]?.reason).to.contain("previous_response_id");
    });
  });

  describe("Chat Completions", () => {
    it("the Baseline follows the leading system message; an unknown model gets wrapped updates in the user turn", async () => {
      const branch = testSource("core/branch", "main");
      const proxy = await start({ core: [branch.core] });
      const history: unknown[] = [
        { role: "system", content: "You are pi." },
        { role: "user", content: "hi" },
      ];
      await (await post(proxy, "/v1/chat/completions", { model: "local-model", messages: history, stream: true })).text();
      expect(sent(0).messages).to.deep.equal([
        { role: "system", content: "You are pi." },
        { role: "system", content: "core/branch is main" },
        { role: "user", content: "hi" },
      ]);
      branch.state.value = "feature";
      history.push({ role: "assistant", content: "hello" }, { role: "user", content: "next" });
      await (await post(proxy, "/v1/chat/completions", { model: "local-model", messages: history })).json();
      expect((sent(1).messages as unknown[]).at(-1)).to.deep.equal({
        role: "user",
        content: "next\n\n<system-update>core/branch is now feature</system-update>",
      });
    });

    it("a hosted model takes a native update after a tool result", async () => {
      const branch = testSource("core/branch", "main");
      const proxy = await start({ core: [branch.core] });
      const history: unknown[] = [{ role: "user", content: "hi" }];
      await (await post(proxy, "/v1/chat/completions", { model: "gpt-4.1", messages: history })).json();
      branch.state.value = "feature";
      history.push(
        {
          role: "assistant",
          content: null,
          tool_calls: [{ id: "t1", type: "function", function: { name: "ls", arguments: "{}" } }],
        },
        { role: "tool", tool_call_id: "t1", content: "a b" },
      );
      await (await post(proxy, "/v1/chat/completions", { model: "gpt-4.1", messages: history })).json();
      expect((sent(1).messages as unknown[]).slice(-2)).to.deep.equal([
        { role: "tool", tool_call_id: "t1", content: "a b" },
        { role: "system", content: "core/branch is now feature" },
      ]);
    });
  });

  it("usage is read on the side from each wire's stream and JSON: cache read, written, uncached, output", async () => {
    const proxy = await start({ core: [testSource("core/branch", "main").core] });
    const seen = events(proxy);
    const user = { role: "user", content: "hi" };
    for (const stream of [true, false]) {
      await (await post(proxy, "/v1/messages", { model: "claude-opus-4-8", max_tokens: 9, messages: [user], stream })).text();
      await (await post(proxy, "/v1/responses", { model: "gpt-5.6", input: [user], stream })).text();
      await (await post(proxy, "/v1/chat/completions", { model: "gpt-4.1", messages: [user], stream })).text();
    }
    await until(() => seen.length === 6);
    const usages = seen.map((event) => event.usage);
    const expected = [
      { input: 12, cacheRead: 30, cacheWrite: 5, output: 3 },
      { input: 15, cacheRead: 25, cacheWrite: 0, output: 3 },
      { input: 20, cacheRead: 20, cacheWrite: 0, output: 3 },
    ];
    expect(usages).to.deep.equal([...expected, ...expected]);
  });

  describe("bad input and faults", () => {
    const body = { model: "claude-opus-4-8", max_tokens: 10, messages: [{ role: "user", content: "hi" }] };

    it("a body that is not JSON gets the API's 400 and nothing is forwarded", async () => {
      const proxy = await start();
      const response = await post(proxy, "/v1/messages", "{not json");
      expect(response.status).to.equal(400);
      const error = (await response.json()) as { type: string; error: { type: string; message: string } };
      expect(error.type).to.equal("error");
      expect(error.error.type).to.equal("invalid_request_error");
      expect(error.error.message).to.match(/not JSON/);
      const openai = await post(proxy, "/v1/chat/completions", { messages: [] });
      expect(openai.status).to.equal(400);
      expect(((await openai.json()) as { error: { message: string } }).error.message).to.match(/model/);
      expect(upstream.requests).to.have.length(0);
    });

    it("a gzip body is read and forwarded decoded with the context; an encoding the proxy cannot read goes unchanged", async () => {
      const proxy = await start({ core: [testSource("core/branch", "main").core] });
      const seen = events(proxy);
      const send = (encoding: string, bytes: Buffer) =>
        fetch(`${proxy.url}/v1/messages`, {
          method: "POST",
          headers: { "content-type": "application/json", "content-encoding": encoding, "x-api-key": "k" },
          body: bytes,
        }).then((response) => response.text());
      await send("gzip", gzipSync(JSON.stringify(body)));
      expect(upstream.requests[0]?.headers["content-encoding"]).to.equal(undefined);
      expect(sent(0).system).to.deep.equal([{ type: "text", text: "core/branch is main" }]);
      await send("zstd", Buffer.from("opaque bytes"));
      expect(upstream.requests[1]?.raw).to.equal("opaque bytes");
      expect(upstream.requests[1]?.headers["content-encoding"]).to.equal("zstd");
      await until(() => seen.length === 2);
      expect(seen[1]?.reason).to.contain("zstd");
    });

    it("the location header names where the session works; one naming no folder is a 400 and nothing is forwarded", async () => {
      const proxy = await start({ core: [testSource("core/branch", "main").core] });
      const seen = events(proxy);
      const elsewhere = mkdtempSync(path.join(os.tmpdir(), "proxy-location-"));
      try {
        await (await post(proxy, "/v1/messages", body, { "x-context-host-location": elsewhere })).text();
        await until(() => seen.length === 1);
        expect(seen[0]?.location).to.equal(elsewhere);
        const response = await post(proxy, "/v1/messages", body, { "x-context-host-location": path.join(elsewhere, "nope") });
        expect(response.status).to.equal(400);
        expect(((await response.json()) as { error: { message: string } }).error.message).to.contain("x-context-host-location");
        expect(upstream.requests).to.have.length(1);
      } finally {
        rmSync(elsewhere, { recursive: true, force: true });
      }
    });

    it("a body over the size limit gets a 413 and nothing is forwarded", async () => {
      const proxy = await start({ maxBodyBytes: 1000 });
      const response = await post(proxy, "/v1/messages", { ...body, messages: [{ role: "user", content: "x".repeat(2000) }] });
      expect(response.status).to.equal(413);
      expect(((await response.json()) as { error: { message: string } }).error.message).to.contain("1000 bytes");
      expect(upstream.requests).to.have.length(0);
    });

    it("upstream errors keep their status, headers and body", async () => {
      const proxy = await start();
      upstream.next.push({
        kind: "error",
        status: 429,
        body: '{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}',
        headers: { "retry-after": "7" },
      });
      const response = await post(proxy, "/v1/messages", body);
      expect(response.status).to.equal(429);
      expect(response.headers.get("retry-after")).to.equal("7");
      expect(await response.text()).to.equal('{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}');
    });

    it("an upstream it cannot reach gets a 502 naming it", async () => {
      const proxy = await start({ upstreams: { anthropic: "http://127.0.0.1:9" } });
      const response = await post(proxy, "/v1/messages", body);
      expect(response.status).to.equal(502);
      expect(((await response.json()) as { error: { message: string } }).error.message).to.contain("http://127.0.0.1:9");
    });

    it("a kept-alive upstream connection closed as a request goes out is retried once on a new one", async () => {
      const proxy = await start();
      const seen = events(proxy);
      expect((await post(proxy, "/v1/messages", body)).status).to.equal(200);
      upstream.next.push({ kind: "reset" });
      const response = await post(proxy, "/v1/messages", body);
      expect(response.status).to.equal(200);
      await response.json();
      // The upstream saw the request twice: the attempt it closed, then the one it answered.
      expect(upstream.requests).to.have.length(3);
      expect(upstream.requests[2]?.raw).to.equal(upstream.requests[1]?.raw);
      await until(() => seen.length === 2);
      expect(seen[1]?.outcome).to.equal("relayed");
    });

    it("a connection the upstream closes on a fresh socket is a 502 saying what happened", async () => {
      const proxy = await start();
      const seen = events(proxy);
      upstream.next.push({ kind: "reset" });
      const response = await post(proxy, "/v1/messages", body);
      expect(response.status).to.equal(502);
      await until(() => seen.length === 1);
      expect(seen[0]?.outcome).to.equal("unreachable");
      expect(seen[0]?.error).to.match(/socket hang up|ECONNRESET/);
    });

    it("an upstream that does not answer in time gets a 504", async () => {
      const proxy = await start({ upstreamTimeoutMs: 200 });
      upstream.next.push({ kind: "hang" });
      const response = await post(proxy, "/v1/messages", body);
      expect(response.status).to.equal(504);
      expect(((await response.json()) as { error: { type: string } }).error.type).to.equal("timeout_error");
    });

    it("a core source that throws never fails the request: it is forwarded unchanged, and says why", async () => {
      const proxy = await start({
        core: [
          {
            key: "core/broken",
            load: () => {
              throw new Error("disk on fire");
            },
          },
        ],
      });
      const seen = events(proxy);
      const response = await post(proxy, "/v1/messages", body);
      expect(response.status).to.equal(200);
      expect(upstream.requests[0]?.body).to.deep.equal(body);
      await until(() => seen.length === 1);
      expect(seen[0]?.forwarded).to.equal("unchanged");
      expect(seen[0]?.reason).to.contain("disk on fire");
    });

    it("a client that disconnects cancels the upstream request", async () => {
      const proxy = await start({ core: [testSource("core/branch", "main").core] });
      upstream.next.push({ kind: "slow", gapMs: 200 });
      const controller = new AbortController();
      const response = await fetch(`${proxy.url}/v1/messages`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ ...body, stream: true }),
        signal: controller.signal,
      });
      const reader = (response.body as ReadableStream<Uint8Array>).getReader();
      await reader.read();
      controller.abort();
      await until(() => upstream.cancelled.length === 1);
      expect(upstream.cancelled).to.deep.equal(["/v1/messages"]);
    });

    it("a stream is relayed with back-pressure: a client that does not read holds the upstream back", async () => {
      const proxy = await start({ core: [testSource("core/branch", "main").core] });
      upstream.next.push({ kind: "flood", chunks: 2000 });
      const response = await post(proxy, "/v1/messages", { ...body, stream: true });
      const reader = (response.body as ReadableStream<Uint8Array>).getReader();
      await reader.read();
      // Wait until the upstream stops writing: it is held back, or it wrote everything.
      let last = -1;
      for (let stable = 0; stable < 10; ) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        stable = upstream.flood.written === last ? stable + 1 : 0;
        last = upstream.flood.written;
      }
      // 2,000 chunks of 64 KiB (125 MiB) were offered; the proxy took only what the sockets and buffers hold.
      expect(upstream.flood.blocked).to.equal(true);
      expect(upstream.flood.written).to.be.below(500);
      await reader.cancel();
    });

    it("after a stream broken mid-way, the client's retry with the same history is forwarded exactly as the first attempt", async () => {
      const branch = testSource("core/branch", "main");
      const proxy = await start({ core: [branch.core] });
      const history: unknown[] = [{ role: "user", content: "hi" }];
      await post(proxy, "/v1/messages", { ...body, messages: history });
      branch.state.value = "feature";
      history.push({ role: "assistant", content: "hello" }, { role: "user", content: "go" });
      upstream.next.push({ kind: "break" });
      const first = await post(proxy, "/v1/messages", { ...body, messages: history, stream: true });
      const broken = await first.text().then(
        () => false,
        () => true,
      );
      expect(broken).to.equal(true);
      branch.state.value = "other";
      await (await post(proxy, "/v1/messages", { ...body, messages: history, stream: true })).text();
      expect(upstream.requests[2]?.raw).to.equal(upstream.requests[1]?.raw);
      expect(upstream.requests[2]?.raw).to.contain("core/branch is now feature");
    });

    it("other paths pass through unchanged", async () => {
      const proxy = await start({ core: [testSource("core/branch", "main").core] });
      const raw = JSON.stringify({ model: "claude-opus-4-8", messages: [{ role: "user", content: "hi" }] });
      const response = await fetch(`${proxy.url}/v1/messages/count_tokens?beta=true`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": "k", "anthropic-version": "2023-06-01" },
        body: raw,
      });
      expect(response.status).to.equal(200);
      expect(upstream.requests[0]?.path).to.equal("/v1/messages/count_tokens?beta=true");
      expect(upstream.requests[0]?.raw).to.equal(raw);
      expect(upstream.requests[0]?.headers["anthropic-version"]).to.equal("2023-06-01");
    });
  });

  describe("security", () => {
    const body = { model: "claude-opus-4-8", max_tokens: 10, messages: [{ role: "user", content: "hi" }] };

    it("listening beyond loopback needs a token", async () => {
      let error: unknown;
      try {
        await start({ host: "0.0.0.0" });
      } catch (caught) {
        error = caught;
      }
      expect(String(error)).to.match(/SettingInvalid: setting host: listening on 0\.0\.0\.0.*needs a token/);
    });

    it("with a token, a request without it gets a 401 and nothing is forwarded; the token never goes upstream", async () => {
      const proxy = await start({ token: "a-long-enough-secret" });
      expect((await post(proxy, "/v1/messages", body)).status).to.equal(401);
      expect((await post(proxy, "/v1/messages", body, { "x-context-host-token": "wrong" })).status).to.equal(401);
      expect(upstream.requests).to.have.length(0);
      expect((await post(proxy, "/v1/messages", body, { "x-context-host-token": "a-long-enough-secret" })).status).to.equal(200);
      expect(upstream.requests[0]?.headers).not.to.have.property("x-context-host-token");
    });

    it("sessions are namespaced by the credential: another key naming the same session gets its own", async () => {
      const branch = testSource("core/branch", "main");
      const proxy = await start({ core: [branch.core] });
      const seen = events(proxy);
      await post(proxy, "/v1/messages", body, { "x-context-host-session": "s1", "x-api-key": "sk-one" });
      await post(proxy, "/v1/messages", body, { "x-context-host-session": "s1", "x-api-key": "sk-two" });
      expect(seen[0]?.sessionId).not.to.equal(seen[1]?.sessionId);
      expect(seen[1]?.baseline).to.equal("core/branch is main");
      expect(JSON.stringify(seen)).not.to.contain("sk-one");
      await proxy.close();
      for (const file of readdirSync(dir)) {
        if (file.startsWith("sessions.db")) expect(readFileSync(path.join(dir, file)).includes("sk-one"), file).to.equal(false);
      }
    });
  });
});

async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  expect(condition()).to.equal(true);
}

describeWithPostgres("context proxy fleet (PostgreSQL store)", (server) => {
  let dir = "";
  let upstream: FakeUpstream;
  const proxies: ContextProxy[] = [];
  beforeEach(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "proxy-fleet-"));
    upstream = await startFakeUpstream();
  });
  afterEach(async () => {
    await Promise.all(proxies.splice(0).map((proxy) => proxy.close()));
    await upstream.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("a conversation alternating between two proxies gets one Baseline and each update once", async () => {
    const schema = `proxy_fleet_${process.pid}`;
    const branch = testSource("core/branch", "main");
    for (let i = 0; i < 2; i++) {
      proxies.push(
        await createContextProxy({
          builtins: false,
          plugins: [],
          watch: false,
          core: [branch.core],
          store: await PostgresSessionStore.open({ connectionString: server().url, schema, poolSize: 2 }),
          location: dir,
          port: 0,
          upstreams: { anthropic: upstream.url },
        }),
      );
    }
    const seen: ProxyBoundaryEvent[] = [];
    for (const proxy of proxies) proxy.onBoundary((event) => seen.push(event));
    const history: unknown[] = [{ role: "user", content: "hi" }];
    const send = (proxy: ContextProxy) =>
      fetch(`${proxy.url}/v1/messages`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": "k" },
        body: JSON.stringify({ model: "claude-opus-4-8", max_tokens: 10, messages: history }),
      }).then((response) => response.json());
    for (let turn = 0; turn < 6; turn++) {
      if (turn === 2) branch.state.value = "feature";
      if (turn === 4) branch.state.value = "release";
      await send(proxies[turn % 2] as ContextProxy);
      history.push({ role: "assistant", content: `reply ${turn}` }, { role: "user", content: `turn ${turn + 1}` });
    }
    expect(seen.filter((event) => event.baseline !== undefined)).to.have.length(1);
    expect(seen.flatMap((event) => (event.update === undefined ? [] : [event.update]))).to.deep.equal([
      "core/branch is now feature",
      "core/branch is now release",
    ]);
    const last = upstream.requests.at(-1)?.body as { messages: { role: string }[] };
    expect(last.messages.filter((message) => message.role === "system")).to.have.length(2);
    for (let i = 1; i < upstream.requests.length; i++) {
      const bodies = upstream.requests.map((request) => request.body as { messages: unknown[] });
      const earlier = (bodies[i - 1] as { messages: unknown[] }).messages;
      const later = (bodies[i] as { messages: unknown[] }).messages;
      expect(earlier.every((message, index) => canonicalJson(message) === canonicalJson(later[index]))).to.equal(true);
    }
  });
});

describe("canonical JSON of a client message", () => {
  it("drops cache markers at any depth and reads string content as one text block; else it is JSON.stringify", () => {
    const plain = { role: "user", content: [{ type: "text", text: 'say "content":"x"' }] };
    expect(canonicalJson(plain)).to.equal(JSON.stringify(plain));
    const marked = {
      role: "user",
      content: [{ type: "tool_result", tool_use_id: "t", content: "out", cache_control: { type: "ephemeral" } }],
    };
    expect(canonicalJson(marked)).to.equal(
      '{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"out"}]}]}',
    );
    expect(canonicalJson({ role: "user", content: "hi" })).to.equal(
      canonicalJson({ role: "user", content: [{ type: "text", text: "hi", cache_control: { type: "ephemeral", ttl: "1h" } }] }),
    );
  });
});

describe("canonical JSON: the rewrite of the JSON text", () => {
  it("matches a walk of the value on messages with markers first, last and alone, nested results and quotes in strings", () => {
    /** The canonical form by walking the value (what the text rewrite must equal). */
    const walked = (value: unknown): string => {
      if (value === null || typeof value !== "object") return JSON.stringify(value);
      if (Array.isArray(value)) return `[${value.map(walked).join(",")}]`;
      const fields = Object.entries(value as Record<string, unknown>).filter(([key]) => key !== "cache_control");
      return `{${fields
        .map(
          ([key, field]) =>
            `${JSON.stringify(key)}:${key === "content" && typeof field === "string" ? `[{"type":"text","text":${JSON.stringify(field)}}]` : walked(field)}`,
        )
        .join(",")}}`;
    };
    const marker = { type: "ephemeral", ttl: "1h" };
    const messages = [
      { role: "user", content: 'a "quoted" \\ text with "content":"x" and "cache_control":{} inside' },
      { role: "user", content: [{ cache_control: marker, type: "text", text: "marker first" }] },
      { cache_control: marker },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "t", content: "out\n", cache_control: marker }] },
      {
        role: "assistant",
        content: [{ type: "text", text: '}{,"cache_control":{"type":1}' }],
        cache_control: { type: "ephemeral" },
      },
    ];
    for (const message of messages) expect(canonicalJson(message)).to.equal(walked(message));
  });
});
