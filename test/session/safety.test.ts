// Sessions that never lose, corrupt or duplicate (issue 11), on real SQLite files:
// replies checked before any write, well-formed text, tool deadlines and failures,
// one provider call per boundary within a host and across hosts, bad locations, limits.

import { copyFileSync, readdirSync, readlinkSync, renameSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { expect } from "chai";
import {
  LocationInvalid,
  type ProviderReply,
  ProviderReplyInvalid,
  SizeLimitExceeded,
  scriptedProvider,
  TextNotWellFormed,
} from "../../core/index.ts";
import { StoreFileChanged } from "../../core/store.ts";
import { hostsPerTest, sent, sleep, testSource, transcript } from "./fixtures.ts";

async function rejection(run: () => Promise<unknown>): Promise<unknown> {
  try {
    await run();
  } catch (error) {
    return error;
  }
  throw new Error("expected a rejection");
}

describe("session runtime: input checks, tools and one in-flight call", () => {
  const { folder, start, startSession } = hostsPerTest();
  const core = () => [testSource("core/branch", "main").core];

  it("a reply with a tool call id that is a number is refused naming the field; nothing is admitted and the session stays readable", async () => {
    const provider = scriptedProvider([
      { text: "x", toolCalls: [{ id: 7, name: "echo", input: {} }] } as unknown as ProviderReply,
    ]);
    let runs = 0;
    const { host, id } = await startSession(provider, { core: core(), tools: { echo: () => `ran ${++runs}` } });
    await host.prompt(id, "one");
    const error = await rejection(() => host.step(id));
    expect(error).to.be.instanceOf(ProviderReplyInvalid);
    expect((error as ProviderReplyInvalid).field).to.equal("/toolCalls/0/id");
    expect(runs).to.equal(0);
    expect(transcript(await host.messages(id))).to.deep.equal(["user: one"]);
    // The retry sends the same request again and its good reply is admitted.
    await host.step(id);
    expect(transcript(await host.messages(id))).to.deep.equal(["user: one", "assistant: reply 2: one"]);
  });

  it("a reply without text, or with text that is a number, is refused naming the text field", async () => {
    for (const bad of [{}, { text: 42 }]) {
      const provider = scriptedProvider([bad as unknown as ProviderReply]);
      const { host, id } = await startSession(provider, { core: core() });
      await host.prompt(id, "one");
      const error = await rejection(() => host.step(id));
      expect(error, JSON.stringify(bad)).to.be.instanceOf(ProviderReplyInvalid);
      expect((error as Error).message).to.contain("text");
      expect(transcript(await host.messages(id))).to.deep.equal(["user: one"]);
    }
  });

  it("a tool input that is not plain JSON is refused before the tool runs", async () => {
    const provider = scriptedProvider(
      Array.from({ length: 3 }, () => ({ text: "x", toolCalls: [{ id: "c1", name: "echo", input: { n: 10n } }] })),
    );
    let runs = 0;
    const { host, id } = await startSession(provider, { core: core(), tools: { echo: () => `ran ${++runs}` } });
    await host.prompt(id, "one");
    for (let attempt = 0; attempt < 3; attempt++) {
      const error = await rejection(() => host.step(id));
      expect(error).to.be.instanceOf(ProviderReplyInvalid);
      expect((error as ProviderReplyInvalid).field).to.equal("/toolCalls/0/input/n");
    }
    expect(runs).to.equal(0);
  });

  it("text with a lone surrogate is refused: a prompt, and a reply's text", async () => {
    const provider = scriptedProvider([{ text: "bad \ud800 reply" }]);
    const { host, id } = await startSession(provider, { core: core() });
    const error = await rejection(() => host.prompt(id, "lone \udc00 surrogate"));
    expect(error).to.be.instanceOf(TextNotWellFormed);
    expect((error as TextNotWellFormed).index).to.equal(5);
    await host.prompt(id, "paired 😀 is fine");
    const replyError = await rejection(() => host.step(id));
    expect(replyError).to.be.instanceOf(ProviderReplyInvalid);
    expect((replyError as ProviderReplyInvalid).field).to.equal("/text");
  });

  it("a tool that never settles misses its own deadline, and that, a prototype-less throw and an oversize result are stored as tool results", async () => {
    const provider = scriptedProvider([
      {
        text: "calling",
        toolCalls: [
          { id: "c1", name: "hang", input: {} },
          { id: "c2", name: "odd", input: {} },
          { id: "c3", name: "big", input: {} },
        ],
      },
    ]);
    const { host, id } = await startSession(provider, {
      core: core(),
      limits: { toolResultBytes: 100 },
      tools: {
        hang: { run: () => new Promise<string>(() => {}), deadlineMs: 50 },
        odd: () => {
          throw Object.create(null);
        },
        big: () => "x".repeat(101),
      },
    });
    await host.prompt(id, "one");
    await host.step(id);
    const results = (await host.messages(id)).filter((m) => m.role === "tool").map((m) => [m.callId, m.text]);
    expect(results.map(([callId]) => callId)).to.deep.equal(["c1", "c2", "c3"]);
    expect(results[0]?.[1]).to.match(/^Error: tool "hang" missed its deadline of 50 ms/);
    expect(results[1]?.[1]).to.match(/^Error: /);
    expect(results[2]?.[1]).to.match(/^Error: tool "big" returned 101 bytes, over the limit of 100 bytes/);
  });

  it("five concurrent steps of one session make one provider call, and every reply handed back is in history", async () => {
    const provider = scriptedProvider();
    const { host, id } = await startSession(provider, { core: core() });
    await host.prompt(id, "one");
    const results = await Promise.all(Array.from({ length: 5 }, () => host.step(id)));
    expect(sent(provider)).to.equal(1);
    expect(results.map((r) => r.kind)).to.deep.equal(["replied", "idle", "idle", "idle", "idle"]);
    expect(transcript(await host.messages(id))).to.deep.equal(["user: one", "assistant: reply 1: one"]);
  });

  it("while one host's provider call is in flight another host on the file sends nothing, and gets the reply from history afterwards", async () => {
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const first = scriptedProvider([
      async () => {
        await held;
        return { text: "first" };
      },
    ]);
    const branch = testSource("core/branch", "main");
    const a = await startSession(first, { core: [branch.core], leaseMs: 150 });
    await a.host.prompt(a.id, "one");
    const stepping = a.host.step(a.id);
    while (first.requests.length === 0) await sleep(1);

    const second = scriptedProvider();
    const b = await start({ providers: { scripted: second }, core: [branch.core], leaseMs: 150 });
    const busy = await b.step(a.id);
    expect(busy.kind).to.equal("in-flight");
    await sleep(400); // the holder renews its lease while it lives
    expect((await b.step(a.id)).kind).to.equal("in-flight");
    expect(sent(second)).to.equal(0);
    release();
    await stepping;
    expect((await b.step(a.id)).kind).to.equal("idle");
    expect(transcript(await b.messages(a.id))).to.deep.equal(["user: one", "assistant: first"]);
  });

  it("a lease whose holder died expires, and the next step resends the identical request", async () => {
    const { SqliteSessionStore, sessionsFile } = await import("../../core/session/store/sqlite.ts");
    const provider = scriptedProvider();
    const { host, id } = await startSession(provider, { core: core(), leaseMs: 100 });
    await host.prompt(id, "one");
    provider.failNext(1);
    await rejection(() => host.step(id));
    // A holder that crashed mid-call: its lease is on the file, nobody renews it.
    const store = new SqliteSessionStore(sessionsFile(folder.path));
    const now = Date.now();
    expect(await store.claimLease(id, { holder: "crashed", expiresAt: now + 100 }, now)).to.equal(true);
    await store.close();
    expect((await host.step(id)).kind).to.equal("in-flight");
    await sleep(150);
    expect((await host.step(id)).kind).to.equal("replied");
    expect(provider.requests[1]).to.deep.equal(provider.requests[0]);
  });

  it("a location that is relative, missing or a file is refused naming it", async () => {
    const provider = scriptedProvider();
    const host = await start({ providers: { scripted: provider }, core: core() });
    const file = path.join(folder.path, "a-file");
    writeFileSync(file, "x");
    for (const location of ["relative/folder", path.join(folder.path, "missing"), file]) {
      const error = await rejection(() => host.createSession({ location, provider: "scripted", model: "m" }));
      expect(error, location).to.be.instanceOf(LocationInvalid);
      expect((error as LocationInvalid).location).to.equal(location);
    }
    const id = await host.createSession({ location: folder.path, provider: "scripted", model: "m" });
    expect(await rejection(() => host.move(id, "relative"))).to.be.instanceOf(LocationInvalid);
  });

  it("a prompt and a source value over their limits are refused with SizeLimitExceeded naming the limit", async () => {
    const big = testSource("core/big", "small");
    const provider = scriptedProvider();
    const { host, id } = await startSession(provider, { core: [big.core], limits: { promptBytes: 10, sourceValueBytes: 20 } });
    const error = await rejection(() => host.prompt(id, "x".repeat(11)));
    expect(error).to.be.instanceOf(SizeLimitExceeded);
    expect((error as SizeLimitExceeded).limit).to.equal("promptBytes");
    await host.prompt(id, "one");
    await host.step(id);
    big.state.value = "y".repeat(30);
    await host.prompt(id, "two");
    const tooBig = await rejection(() => host.step(id));
    expect(tooBig).to.be.instanceOf(SizeLimitExceeded);
    expect((tooBig as SizeLimitExceeded).what).to.contain("core/big");
    expect(transcript(await host.messages(id))).to.deep.equal(["user: one", "assistant: reply 1: one"]);
  });

  it("a sessions.db deleted or replaced while the host runs is detected at the next commit, naming the file", async () => {
    const { sessionsFile } = await import("../../core/session/store/sqlite.ts");
    const file = sessionsFile(folder.path);
    for (const fault of ["deleted", "replaced"] as const) {
      const provider = scriptedProvider();
      const { host, id } = await startSession(provider, { core: core() });
      await host.prompt(id, "one");
      await host.step(id);
      if (fault === "deleted") {
        for (const suffix of ["", "-wal", "-shm"]) rmSync(`${file}${suffix}`, { force: true });
      } else {
        copyFileSync(file, `${file}.copy`);
        renameSync(`${file}.copy`, file);
      }
      const error = await rejection(() => host.prompt(id, "two"));
      expect(error, fault).to.be.instanceOf(StoreFileChanged);
      expect((error as StoreFileChanged).file).to.equal(file);
      await host.close();
    }
  });

  it("a store that fails to open (a newer schema) keeps no file open", async () => {
    const { SqliteSessionStore, sessionsFile } = await import("../../core/session/store/sqlite.ts");
    const file = sessionsFile(folder.path);
    const store = new SqliteSessionStore(file);
    await store.close();
    const Database = (await import("better-sqlite3")).default;
    const db = new Database(file);
    db.pragma("user_version = 999");
    db.close();
    const openOnFile = () =>
      readdirSync("/proc/self/fd").filter((fd) => {
        try {
          return readlinkSync(`/proc/self/fd/${fd}`).startsWith(file);
        } catch {
          return false;
        }
      }).length;
    expect(() => new SqliteSessionStore(file)).to.throw("newer than this context-host");
    expect(openOnFile()).to.equal(0);
  });
});
