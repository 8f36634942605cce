// The life of an MCP server's connection as pure transitions: each one from the states that
// allow it, each refused one throwing, and results about a lost link changing nothing.

import type { Client, McpSubscription } from "@modelcontextprotocol/client";
import { expect } from "chai";
import {
  attemptBegan,
  type ConnectionState,
  closed,
  connected,
  firstRetryMs,
  idle,
  isListeningOn,
  isLive,
  type Link,
  listedState,
  listenEnded,
  listened,
  listensFor,
  liveLink,
  maxRetryMs,
  type RetryTimer,
  retryDelayMs,
  subscribedOn,
  subscribedTo,
  unsubscribedFrom,
  wentDown,
} from "../../core/mcp/connection-state.ts";

// Stand-ins: the transitions only hold these and compare them by identity.
const client = {} as Client;
const attempt = Promise.resolve();
const retry = {} as RetryTimer;
const subscription = {} as McpSubscription;

function linkOf(name: string): Link {
  return { client: { name } as unknown as Client, canSubscribe: true, instructions: undefined, isModern: true };
}

const link = linkOf("live");
const lostLink = linkOf("lost");

function connecting(retryMs: number): ConnectionState {
  return { kind: "connecting", client, attempt, retryMs };
}

function down(retryMs: number): ConnectionState {
  return { kind: "down", retry, retryMs };
}

function live(subscribed: readonly string[] = []): ConnectionState {
  return { kind: "connected", link, subscribed: new Set(subscribed), listening: undefined };
}

const everyState: Record<ConnectionState["kind"], ConnectionState> = {
  idle,
  connecting: connecting(firstRetryMs),
  connected: live(),
  down: down(firstRetryMs),
  closed,
};

function statesBut(...allowed: Array<ConnectionState["kind"]>): ConnectionState[] {
  return Object.values(everyState).filter((state) => !allowed.includes(state.kind));
}

describe("MCP connection state: connecting", () => {
  it("the first attempt begins from idle; should it fail, the next waits the first back-off", () => {
    expect(attemptBegan(idle, client, attempt)).to.deep.equal({ kind: "connecting", client, attempt, retryMs: firstRetryMs });
  });

  it("an attempt after a back-off begins; should it fail, the next waits twice as long", () => {
    expect(attemptBegan(down(500), client, attempt)).to.deep.equal(connecting(1000));
  });

  it("the back-off grows no longer than its longest", () => {
    expect(attemptBegan(down(20_000), client, attempt)).to.deep.equal(connecting(maxRetryMs));
    expect(attemptBegan(down(maxRetryMs), client, attempt)).to.deep.equal(connecting(maxRetryMs));
  });

  it("an attempt cannot begin while one runs, while connected, or once closed", () => {
    for (const state of statesBut("idle", "down")) {
      expect(() => attemptBegan(state, client, attempt), state.kind).to.throw(`cannot begin in state ${state.kind}`);
    }
  });

  it("a successful attempt makes its link live, told of no update and listening for nothing", () => {
    const state = connected(connecting(1000), link);
    expect(state).to.deep.equal({ kind: "connected", link, subscribed: new Set(), listening: undefined });
    expect(isLive(state, link)).to.equal(true);
    expect(liveLink(state)).to.equal(link);
  });

  it("only a running attempt can make a link live", () => {
    for (const state of statesBut("connecting")) {
      expect(() => connected(state, link), state.kind).to.throw(`cannot be made in state ${state.kind}`);
    }
  });
});

describe("MCP connection state: going down", () => {
  it("a failed attempt goes down for its back-off", () => {
    expect(retryDelayMs(connecting(1000))).to.equal(1000);
    expect(wentDown(connecting(1000), retry)).to.deep.equal({ kind: "down", retry, retryMs: 1000 });
  });

  it("a lost link goes down for the first back-off: a live link started the series afresh", () => {
    expect(retryDelayMs(live())).to.equal(firstRetryMs);
    expect(wentDown(live(), retry)).to.deep.equal({ kind: "down", retry, retryMs: firstRetryMs });
  });

  it("failures in a row double the wait until a link is live, and the next loss waits the first back-off again", () => {
    const waits: number[] = [];
    let state = attemptBegan(idle, client, attempt);
    for (let failure = 0; failure < 3; failure++) {
      waits.push(retryDelayMs(state));
      state = attemptBegan(wentDown(state, retry), client, attempt);
    }
    state = connected(state, link);
    waits.push(retryDelayMs(state));
    expect(waits).to.deep.equal([firstRetryMs, 2 * firstRetryMs, 4 * firstRetryMs, firstRetryMs]);
  });

  it("only an attempt or a live link can go down", () => {
    for (const state of statesBut("connecting", "connected")) {
      expect(() => retryDelayMs(state), state.kind).to.throw(`cannot go down in state ${state.kind}`);
      expect(() => wentDown(state, retry), state.kind).to.throw(`cannot go down in state ${state.kind}`);
    }
  });

  it("a link that is no longer live is told of no update and listens for nothing", () => {
    for (const state of statesBut("connected")) {
      expect(isLive(state, link), state.kind).to.equal(false);
      expect(liveLink(state), state.kind).to.equal(undefined);
      expect([...subscribedOn(state, link)], state.kind).to.deep.equal([]);
      expect(listensFor(state, link, "{}"), state.kind).to.equal(false);
    }
  });
});

describe("MCP connection state: subscriptions", () => {
  it("a subscription answered on the live link is recorded", () => {
    const state = subscribedTo(live(["a://1"]), link, "a://2");
    expect([...subscribedOn(state, link)]).to.deep.equal(["a://1", "a://2"]);
  });

  it("a transition leaves the state it was given as it was", () => {
    const before = live(["a://1"]);
    subscribedTo(before, link, "a://2");
    unsubscribedFrom(before, link, ["a://1"]);
    expect(before).to.deep.equal(live(["a://1"]));
  });

  it("resources no longer exposed leave the live link's subscriptions", () => {
    const state = unsubscribedFrom(live(["a://1", "a://2", "a://3"]), link, ["a://1", "a://3", "a://9"]);
    expect([...subscribedOn(state, link)]).to.deep.equal(["a://2"]);
  });

  it("a listen on the live link replaces its subscriptions with what the server honoured", () => {
    const state = listened(live(["a://1"]), link, { filter: "f", subscription }, ["a://2", "a://3"]);
    expect([...subscribedOn(state, link)]).to.deep.equal(["a://2", "a://3"]);
    expect(listensFor(state, link, "f")).to.equal(true);
    expect(listensFor(state, link, "g")).to.equal(false);
    expect(isListeningOn(state, subscription)).to.equal(true);
  });

  it("an empty filter listens with no stream and no subscription", () => {
    const state = listened(live(["a://1"]), link, { filter: "empty", subscription: undefined }, []);
    expect(listensFor(state, link, "empty")).to.equal(true);
    expect([...subscribedOn(state, link)]).to.deep.equal([]);
  });

  it("a stream the server ends leaves the live link listening for nothing and told of no update", () => {
    const listening = listened(live(), link, { filter: "f", subscription }, ["a://1"]);
    const state = listenEnded(listening, subscription);
    expect(state).to.deep.equal(live());
    expect(isListeningOn(state, subscription)).to.equal(false);
  });

  it("the end of a stream the live link no longer listens on changes nothing", () => {
    const listening = listened(live(), link, { filter: "f", subscription }, ["a://1"]);
    const replaced = {} as McpSubscription;
    expect(isListeningOn(listening, replaced)).to.equal(false);
    expect(listenEnded(listening, replaced)).to.equal(listening);
  });

  it("results about a lost link change nothing, whatever the state", () => {
    const states = [...Object.values(everyState), listened(live(), link, { filter: "f", subscription }, ["a://1"])];
    for (const state of states) {
      expect(subscribedTo(state, lostLink, "a://2"), state.kind).to.equal(state);
      expect(unsubscribedFrom(state, lostLink, ["a://1"]), state.kind).to.equal(state);
      expect(listened(state, lostLink, { filter: "g", subscription }, []), state.kind).to.equal(state);
    }
  });

  it("the end of a stream changes nothing unless the live link listens on it", () => {
    for (const state of Object.values(everyState)) {
      expect(listenEnded(state, subscription), state.kind).to.equal(state);
    }
  });
});

describe("MCP connection state: listings", () => {
  it("a listing shows a server not started yet as connecting, and every other state by its name", () => {
    const shown = Object.values(everyState).map((state) => listedState(state));
    expect(shown).to.deep.equal(["connecting", "connecting", "connected", "down", "closed"]);
  });
});
