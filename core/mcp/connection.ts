// Owns one MCP server's connection: connecting (a spawned stdio process, or Streamable HTTP),
// reconnecting after a growing back-off when an attempt fails or the link is lost, what the link
// is told updates of, and closing. Where it stands is one `ConnectionState`, moved only by the
// transitions of connection-state.ts; its server hears what happens through `events`.

import { setMaxListeners } from "node:events";
import path from "node:path";
import type { Client, Transport } from "@modelcontextprotocol/client";
import { withinDeadline } from "../base/deadline.ts";
import { messageOf } from "../base/errors.ts";
import {
  attemptBegan,
  type ConnectionState,
  closed,
  connected,
  idle,
  isListeningOn,
  isLive,
  type Link,
  listenEnded,
  listened,
  listensFor,
  liveLink,
  retryDelayMs,
  subscribedOn,
  subscribedTo,
  unsubscribedFrom,
  wentDown,
} from "./connection-state.ts";
import type { McpSdk } from "./sdk.ts";
import { isStdio, type McpServerSettings } from "./settings.ts";

/** How long connecting (spawning, `initialize`) may take; a boundary waits for it only up to its deadline. */
export const connectDeadlineMs = 10_000;

/** What a connection tells its server. */
export interface ConnectionEvents {
  /** A link is live (again): anything may have changed while there was none. */
  readonly connected: () => void;
  /** The server told that the resource at `uri` changed. */
  readonly resourceUpdated: (uri: string) => void;
  /** The server told that its list of resources changed. */
  readonly listChanged: () => void;
  /** The server ended the `subscriptions/listen` stream (`why`): what changed meanwhile was not told. */
  readonly listenEnded: (why: string) => void;
  /** An attempt failed or the link was lost (`reason`); the next attempt waits its back-off. */
  readonly wentDown: (reason: string) => void;
}

export interface McpConnectionOptions {
  readonly name: string;
  readonly settings: McpServerSettings;
  readonly sdk: McpSdk;
  /** The working folder a stdio server's relative `cwd` is resolved against. */
  readonly cwd: string;
  /** The client's version, as `initialize` tells the server. */
  readonly clientVersion: string;
  /** The deadline of each request (and the least time connecting may take). */
  readonly deadlineMs: number;
  readonly events: ConnectionEvents;
}

/** What a modern link listens for: `list_changed`, and the updates of these URIs. */
export interface ListenFilter {
  readonly resourcesListChanged: boolean;
  readonly resourceSubscriptions: readonly string[];
}

export class McpConnection {
  readonly #options: McpConnectionOptions;
  #state: ConnectionState = idle;

  constructor(options: McpConnectionOptions) {
    this.#options = options;
  }

  /** Where the connection stands: a value its transitions replace, never change. */
  get state(): ConnectionState {
    return this.#state;
  }

  /** The live link; none while not connected. */
  get link(): Link | undefined {
    return liveLink(this.#state);
  }

  /** Starts the first attempt to connect, in the background. */
  start(): void {
    this.#attempt();
  }

  /** Whether `link` is still the live one: a failure on any other is not the server's to report. */
  isLive(link: Link): boolean {
    return isLive(this.#state, link);
  }

  /** The URIs whose updates `link` is told of; none once it is no longer live. */
  subscribedOn(link: Link): ReadonlySet<string> {
    return subscribedOn(this.#state, link);
  }

  /** Whether `link` is live and already listens for `filter`. */
  listensFor(link: Link, filter: ListenFilter): boolean {
    return listensFor(this.#state, link, JSON.stringify(filter));
  }

  /**
   * Sends a request on `link`, and once more at once when it failed for want of a connection
   * while the link is live: a kept-alive socket the server had closed (ECONNRESET) fails the
   * first request after a pause.
   */
  async request<T>(link: Link, send: () => Promise<T>): Promise<T> {
    try {
      return await send();
    } catch (error) {
      if (!isConnectionFailure(error) || !this.isLive(link)) throw error;
      return await send();
    }
  }

  /**
   * A request on `link` failed. For want of a connection (not the server's JSON-RPC error, a
   * timeout or a malformed result; over Streamable HTTP nothing else says a server went away),
   * a live link is lost: it is closed, and reconnecting waits the back-off.
   */
  loseOn(link: Link, error: unknown): void {
    if (!isConnectionFailure(error) || !this.isLive(link)) return;
    // Down first: closing the client calls its `onclose`, which then finds the link no longer live.
    this.#goDown("the connection was lost");
    void link.client.close().catch(() => {});
  }

  /** Subscribes `link` to the updates of the resource at `uri`; rejects as `resources/subscribe` does. */
  async subscribe(link: Link, uri: string): Promise<void> {
    await this.request(link, () => link.client.subscribeResource({ uri }, { timeout: this.#options.deadlineMs }));
    this.#state = subscribedTo(this.#state, link, uri);
  }

  /** Resources no longer exposed: `link` is no longer told their updates (a 2025 server is asked to stop). */
  unsubscribe(link: Link, uris: readonly string[]): void {
    const subscribed = this.subscribedOn(link);
    const told = uris.filter((uri) => subscribed.has(uri));
    this.#state = unsubscribedFrom(this.#state, link, uris);
    if (link.isModern) return;
    for (const uri of told) {
      link.client.unsubscribeResource({ uri }, { timeout: this.#options.deadlineMs }).catch(() => {});
    }
  }

  /**
   * Makes a modern link listen for `filter` on a `subscriptions/listen` stream: a new stream before
   * the old one closes, so no update falls between; an empty filter needs none. Rejects as the
   * request does. A stream the server ends is told as `listenEnded`.
   */
  async listen(link: Link, filter: ListenFilter): Promise<void> {
    const text = JSON.stringify(filter);
    if (listensFor(this.#state, link, text)) return;
    const previous = isLive(this.#state, link) ? this.#state.listening?.subscription : undefined;
    if (!filter.resourcesListChanged && filter.resourceSubscriptions.length === 0) {
      this.#state = listened(this.#state, link, { filter: text, subscription: undefined }, []);
      await previous?.close().catch(() => {});
      return;
    }
    const subscription = await this.request(link, () =>
      link.client.listen(
        {
          ...(filter.resourcesListChanged ? { resourcesListChanged: true } : {}),
          ...(filter.resourceSubscriptions.length === 0 ? {} : { resourceSubscriptions: [...filter.resourceSubscriptions] }),
        },
        { timeout: this.#options.deadlineMs },
      ),
    );
    const honoured = subscription.honoredFilter.resourceSubscriptions ?? [];
    this.#state = listened(this.#state, link, { filter: text, subscription }, honoured);
    void subscription.closed.then((why) => {
      if (why === "local" || !isListeningOn(this.#state, subscription)) return;
      this.#state = listenEnded(this.#state, subscription);
      this.#options.events.listenEnded(why);
    });
    await previous?.close().catch(() => {});
  }

  /** Ends the attempt or the link (a stdio server's process with it); nothing connects afterwards. Idempotent. */
  async close(): Promise<void> {
    const state = this.#state;
    if (state.kind === "closed") return;
    this.#state = closed;
    if (state.kind === "down") clearTimeout(state.retry);
    if (state.kind === "connecting") {
      await state.client.close().catch(() => {});
      await state.attempt.catch(() => {});
    }
    if (state.kind === "connected") await state.link.client.close().catch(() => {});
  }

  /** Starts an attempt to connect, unless closed. */
  #attempt(): void {
    if (this.#state.kind === "closed") return;
    const client = this.#client();
    this.#state = attemptBegan(this.#state, client, this.#connect(client));
  }

  /** A client whose notifications go to the server's events. */
  #client(): Client {
    const { sdk, settings, clientVersion, events } = this.#options;
    // Over Streamable HTTP the client offers the 2026-07-28 revision and falls back to 2025; over
    // stdio the SDK would probe by spawning the server twice, so stdio speaks 2025 (decision 140).
    const client = new sdk.Client(
      { name: "context-host", version: clientVersion },
      { capabilities: {}, ...(isStdio(settings) ? {} : { versionNegotiation: { mode: "auto" as const } }) },
    );
    client.setNotificationHandler("notifications/resources/updated", (notification) => {
      events.resourceUpdated(notification.params.uri);
    });
    client.setNotificationHandler("notifications/resources/list_changed", () => {
      events.listChanged();
    });
    return client;
  }

  #transport(): Transport {
    const { sdk, settings } = this.#options;
    if (isStdio(settings)) {
      return new sdk.StdioClientTransport({
        command: settings.command,
        ...(settings.args === undefined ? {} : { args: settings.args }),
        ...(settings.env === undefined ? {} : { env: settings.env }),
        ...(settings.cwd === undefined ? {} : { cwd: path.resolve(this.#options.cwd, settings.cwd) }),
        stderr: "ignore",
      });
    }
    return new sdk.StreamableHTTPClientTransport(new URL(settings.url), {
      ...(settings.headers === undefined ? {} : { requestInit: { headers: settings.headers } }),
      fetch: quietFetch,
    });
  }

  /**
   * One attempt, which never rejects: the link goes live, or the client is closed and the
   * connection goes down. Closed meanwhile: the client is closed and the state stays closed.
   */
  async #connect(client: Client): Promise<void> {
    const ms = Math.max(this.#options.deadlineMs, connectDeadlineMs);
    try {
      await withinDeadline(
        () => client.connect(this.#transport(), { timeout: ms }),
        ms,
        `connecting to MCP server ${this.#options.name}`,
      );
    } catch (error) {
      await client.close().catch(() => {});
      if (this.#state.kind === "closed") return;
      this.#goDown(`cannot connect: ${messageOf(error)}`);
      return;
    }
    if (this.#state.kind === "closed") {
      await client.close().catch(() => {});
      return;
    }
    this.#goLive(client);
  }

  /** The attempt connected: its link is live. */
  #goLive(client: Client): void {
    const link: Link = {
      client,
      canSubscribe: client.getServerCapabilities()?.resources?.subscribe === true,
      instructions: client.getInstructions() || undefined,
      isModern: client.getProtocolEra() === "modern",
    };
    // The SDK's one hook for a connection that ends.
    client.onclose = () => this.#closedBy(link);
    this.#state = connected(this.#state, link);
    this.#options.events.connected();
  }

  /** The client of `link` closed: if it was live, the sources are down until a reconnection. */
  #closedBy(link: Link): void {
    if (!this.isLive(link)) return;
    this.#goDown("the connection closed");
  }

  /** Down: the sources are unavailable until the next attempt, after the back-off. */
  #goDown(reason: string): void {
    const retry = setTimeout(() => this.#attempt(), retryDelayMs(this.#state));
    retry.unref();
    this.#state = wentDown(this.#state, retry);
    this.#options.events.wentDown(reason);
  }
}

/** Whether a request failed for want of a connection: not the server's JSON-RPC error, a timeout or a malformed result. */
function isConnectionFailure(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code !== "number" && code !== "REQUEST_TIMEOUT" && code !== "INVALID_RESULT";
}

const quietSignals = new WeakSet<AbortSignal>();

/**
 * `fetch` for the Streamable HTTP transport, which gives every request the one signal of its
 * connection: each request adds an abort listener that lives until the request is collected,
 * so a host that reads often passes Node's warning threshold with no leak. That signal may
 * have any number of listeners.
 */
function quietFetch(url: string | URL, init?: RequestInit): Promise<Response> {
  const signal = init?.signal;
  if (signal !== undefined && signal !== null && !quietSignals.has(signal)) {
    setMaxListeners(0, signal);
    quietSignals.add(signal);
  }
  return fetch(url, init);
}
