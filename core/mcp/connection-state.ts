// Owns where one MCP server's connection stands, as explicit states and their transitions: the
// connection moves only through these functions. A transition its state does not allow throws;
// a result about a link that is no longer the live one (it was lost meanwhile) changes nothing.

import type { Client, McpSubscription } from "@modelcontextprotocol/client";
import type { McpServerInfo } from "./info.ts";

/** The back-off before the first reconnection; it doubles with each failed attempt, up to `maxRetryMs`. */
export const firstRetryMs = 250;
export const maxRetryMs = 30_000;

/** A live connection: what the server told of itself when it was made. */
export interface Link {
  readonly client: Client;
  readonly canSubscribe: boolean;
  readonly instructions: string | undefined;
  /** Negotiated the 2026-07-28 revision: updates and `list_changed` come on one `subscriptions/listen` stream. */
  readonly isModern: boolean;
}

/** What a modern link was last made to listen for. */
export interface Listening {
  /** The filter, as text. */
  readonly filter: string;
  /** Its `subscriptions/listen` stream; none is needed for an empty filter. */
  readonly subscription: McpSubscription | undefined;
}

/** The timer that starts the next attempt. */
export type RetryTimer = ReturnType<typeof setTimeout>;

export type ConnectionState =
  /** Not started: no attempt yet. */
  | { readonly kind: "idle" }
  /**
   * An attempt runs: `client` is its client (closing it ends the attempt, a spawned process with
   * it); `attempt` settles once it connected or failed; should it fail, the next one waits `retryMs`.
   */
  | { readonly kind: "connecting"; readonly client: Client; readonly attempt: Promise<void>; readonly retryMs: number }
  /** Connected: `subscribed` holds the URIs whose updates `link` is told of; `listening`, a modern link's stream. */
  | {
      readonly kind: "connected";
      readonly link: Link;
      readonly subscribed: ReadonlySet<string>;
      readonly listening: Listening | undefined;
    }
  /** Down: the sources are unavailable until `retry` starts the next attempt, `retryMs` after going down. */
  | { readonly kind: "down"; readonly retry: RetryTimer; readonly retryMs: number }
  /** Closed: nothing connects any more. */
  | { readonly kind: "closed" };

export type Connected = Extract<ConnectionState, { readonly kind: "connected" }>;

export const idle: ConnectionState = Object.freeze({ kind: "idle" });
export const closed: ConnectionState = Object.freeze({ kind: "closed" });

const noneSubscribed: ReadonlySet<string> = new Set();

/** An attempt to connect began: the first one, or the one a back-off waited for (should it fail, the next waits twice as long). */
export function attemptBegan(state: ConnectionState, client: Client, attempt: Promise<void>): ConnectionState {
  if (state.kind === "idle") return { kind: "connecting", client, attempt, retryMs: firstRetryMs };
  if (state.kind === "down") {
    return { kind: "connecting", client, attempt, retryMs: Math.min(state.retryMs * 2, maxRetryMs) };
  }
  throw new Error(`an attempt to connect cannot begin in state ${state.kind}`);
}

/** The attempt connected: the link is live, told of no update yet. */
export function connected(state: ConnectionState, link: Link): ConnectionState {
  if (state.kind !== "connecting") throw new Error(`a connection cannot be made in state ${state.kind}`);
  return { kind: "connected", link, subscribed: noneSubscribed, listening: undefined };
}

/** How long the next attempt waits should the connection go down now: the attempt's back-off, or the first after a live link. */
export function retryDelayMs(state: ConnectionState): number {
  if (state.kind === "connecting") return state.retryMs;
  if (state.kind === "connected") return firstRetryMs;
  throw new Error(`a connection cannot go down in state ${state.kind}`);
}

/** The attempt failed, or the live link was lost: `retry` starts the next attempt after `retryDelayMs(state)`. */
export function wentDown(state: ConnectionState, retry: RetryTimer): ConnectionState {
  return { kind: "down", retry, retryMs: retryDelayMs(state) };
}

/** Whether `link` is the live connection. */
export function isLive(state: ConnectionState, link: Link): state is Connected {
  return state.kind === "connected" && state.link === link;
}

/** The live link; none while not connected. */
export function liveLink(state: ConnectionState): Link | undefined {
  return state.kind === "connected" ? state.link : undefined;
}

/** The URIs whose updates `link` is told of; none once it is no longer live. */
export function subscribedOn(state: ConnectionState, link: Link): ReadonlySet<string> {
  return isLive(state, link) ? state.subscribed : noneSubscribed;
}

/** Whether `link` is live and listens for `filter` (as text). */
export function listensFor(state: ConnectionState, link: Link, filter: string): boolean {
  return isLive(state, link) && state.listening?.filter === filter;
}

/** `link` is told the updates of the resource at `uri` (a `resources/subscribe` was answered). */
export function subscribedTo(state: ConnectionState, link: Link, uri: string): ConnectionState {
  if (!isLive(state, link)) return state;
  return { ...state, subscribed: new Set([...state.subscribed, uri]) };
}

/** Resources no longer exposed: `link` is no longer told their updates. */
export function unsubscribedFrom(state: ConnectionState, link: Link, uris: readonly string[]): ConnectionState {
  if (!isLive(state, link)) return state;
  const subscribed = new Set(state.subscribed);
  for (const uri of uris) subscribed.delete(uri);
  return { ...state, subscribed };
}

/** `link` listens as `listening` says; the server honoured the updates of `honoured` (every other URI is not subscribed). */
export function listened(state: ConnectionState, link: Link, listening: Listening, honoured: readonly string[]): ConnectionState {
  if (!isLive(state, link)) return state;
  return { ...state, listening, subscribed: new Set(honoured) };
}

/** Whether `subscription` is the live link's stream. */
export function isListeningOn(state: ConnectionState, subscription: McpSubscription): state is Connected {
  return state.kind === "connected" && state.listening?.subscription === subscription;
}

/** The server ended the live link's stream: it listens for nothing, and is told no update, until it listens again. */
export function listenEnded(state: ConnectionState, subscription: McpSubscription): ConnectionState {
  if (!isListeningOn(state, subscription)) return state;
  return { ...state, listening: undefined, subscribed: noneSubscribed };
}

/** The state a listing shows: a server not started yet is about to connect. */
export function listedState(state: ConnectionState): McpServerInfo["state"] {
  return state.kind === "idle" ? "connecting" : state.kind;
}
