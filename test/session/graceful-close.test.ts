// Closing a host while a step is in flight (issue 32, decision 176), on each store: the step
// stores its reply if it ends within `closeTimeoutMs`; one that does not is abandoned at the
// bound (its provider call aborted, its lease released), so another host steps the session
// at once; a step asked for once closing began is refused with `HostClosed`.

import os from "node:os";
import { expect } from "chai";
import {
  createHost,
  type Host,
  HostClosed,
  type Provider,
  type ProviderRequest,
  type ScriptedProvider,
  scriptedProvider,
} from "../../core/index.ts";
import { PostgresSessionStore, type SessionStore, SqliteSessionStore } from "../../core/store.ts";
import { sleep, tempFolder, transcript } from "./fixtures.ts";
import { describeWithPostgres } from "./postgres-server.ts";

/** How a test opens a store: each call another handle on the same sessions, as another process would have. */
type OpenStore = () => Promise<SessionStore>;

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected a rejection");
}

/** A provider whose first call waits until `answer()`; later calls answer at once. */
function heldProvider(): { provider: ScriptedProvider; answer(): void } {
  let answer = () => {};
  const answered = new Promise<void>((resolve) => {
    answer = resolve;
  });
  const provider = scriptedProvider([
    async () => {
      await answered;
      return { text: "the answer, paid for" };
    },
  ]);
  return { provider, answer };
}

/** A provider that never answers and ignores the signal; it records the signal each call was given. */
function silentProvider(): Provider & { requests: ProviderRequest[]; signals: Array<AbortSignal | undefined> } {
  const requests: ProviderRequest[] = [];
  const signals: Array<AbortSignal | undefined> = [];
  return {
    requests,
    signals,
    send(request, options) {
      requests.push(structuredClone(request) as ProviderRequest);
      signals.push(options?.signal);
      return new Promise(() => {});
    },
  };
}

function declareClosing(openStore: () => OpenStore, location: () => string): void {
  const hosts: Host[] = [];
  afterEach(async () => {
    for (const host of hosts.splice(0)) await host.close();
  });

  async function hostOn(provider: Provider, closeTimeoutMs?: number): Promise<Host> {
    const host = await createHost({
      store: await openStore()(),
      providers: { scripted: provider },
      builtins: false,
      plugins: [],
      watch: false,
      ...(closeTimeoutMs === undefined ? {} : { closeTimeoutMs }),
    });
    hosts.push(host);
    return host;
  }

  it("a step in flight when close begins stores its reply, close waiting for it; a step asked for meanwhile is refused", async () => {
    const { provider, answer } = heldProvider();
    const host = await hostOn(provider, 20_000);
    const id = await host.createSession({ location: location(), provider: "scripted", model: "m" });
    const other = await host.createSession({ location: location(), provider: "scripted", model: "m" });
    await host.prompt(id, "one");
    await host.prompt(other, "two");
    const stepping = host.step(id);
    while (provider.requests.length === 0) await sleep(1);

    let isClosed = false;
    const closing = host.close().then(() => {
      isClosed = true;
    });
    const refused = await rejection(host.step(other));
    expect(refused).to.be.an.instanceOf(HostClosed);
    expect(refused).to.include({ sessionId: other, isAbandoned: false });
    await sleep(20);
    expect(isClosed, "close waits for the step in flight").to.equal(false);
    answer();
    const result = await stepping;
    await closing;
    expect(result.kind).to.equal("replied");
    expect(provider.requests).to.have.length(1);

    const next = await hostOn(scriptedProvider());
    expect(transcript(await next.messages(id))).to.deep.equal(["user: one", "assistant: the answer, paid for"]);
    expect(transcript(await next.messages(other)), "the refused step admitted nothing").to.deep.equal([]);
  });

  it("a step whose provider never answers is abandoned at closeTimeoutMs: its call is aborted, and another host steps the session at once", async () => {
    const silent = silentProvider();
    const host = await hostOn(silent, 100);
    const id = await host.createSession({ location: location(), provider: "scripted", model: "m" });
    await host.prompt(id, "one");
    const stepping = rejection(host.step(id));
    while (silent.requests.length === 0) await sleep(1);

    await host.close();
    const error = await stepping;
    expect(error).to.be.an.instanceOf(HostClosed);
    expect(error).to.include({ sessionId: id, isAbandoned: true });
    expect(silent.signals[0]?.aborted, "the provider call's signal").to.equal(true);

    // The default lease (30 s) would keep a second host out; the released one does not.
    const next = scriptedProvider();
    const second = await hostOn(next);
    const resumed = await second.step(id);
    expect(resumed.kind).to.equal("replied");
    expect(next.requests, "the identical request, sent again").to.deep.equal(silent.requests);
    expect(transcript(await second.messages(id))).to.deep.equal(["user: one", "assistant: reply 1: one"]);
  });
}

describe("host close: steps in flight, on SQLite", () => {
  let folder: ReturnType<typeof tempFolder> | undefined;
  beforeEach(() => {
    folder = tempFolder("close");
  });
  afterEach(() => {
    folder?.remove();
  });
  const path = () => folder?.path as string;
  declareClosing(
    () => async () => new SqliteSessionStore(`${path()}/sessions.db`),
    () => path(),
  );
});

describeWithPostgres("host close: steps in flight, on PostgreSQL", (server) => {
  let round = 0;
  let schema = "";
  beforeEach(() => {
    schema = `close_${process.pid}_${++round}`;
  });
  declareClosing(
    () => () => PostgresSessionStore.open({ connectionString: server().url, schema, poolSize: 2 }),
    () => os.tmpdir(),
  );
});
