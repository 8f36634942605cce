// Owns one MCP server as a set of Context Sources: its connection (reconnected with
// back-off), the resources it exposes (one registration each, `mcp/<server>/<name>`), its
// instructions, and what a boundary does with them. A notification only marks a resource
// changed; `prepare`, run at a Safe Provider-Turn Boundary before the sources are observed,
// lists, subscribes and reads what is due within the server's deadline; observation then
// reads nothing and answers from what was read, so an unchanged resource costs no read.

import { setMaxListeners } from "node:events";
import path from "node:path";
import type { Client, McpSubscription } from "@modelcontextprotocol/client";
import { DeadlineExceeded, withinDeadline } from "../base/deadline.ts";
import type { Diagnostics } from "../base/diagnostics.ts";
import { messageOf } from "../base/errors.ts";
import { Scope } from "../base/scope.ts";
import type { Registration, Registry } from "../registry/registry.ts";
import { type Absent, absent, contain, type Key, type Unavailable, unavailable } from "../system-context/index.ts";
import type { McpServerInfo } from "./info.ts";
import {
  InstructionsValue,
  instructionsKey,
  instructionsRenderers,
  mcpNamespace,
  ResourceValue,
  resourceKeyName,
  resourceRenderers,
  resourceValueOf,
} from "./render.ts";
import type { McpSdk } from "./sdk.ts";
import { expandTemplate, isStdio, type McpServerSettings } from "./settings.ts";

/** A server's default deadline at a boundary (connect, list, subscribe, read). */
export const defaultMcpDeadlineMs = 2000;
/** How long connecting (spawning, `initialize`) may take; a boundary waits for it only up to its deadline. */
export const connectDeadlineMs = 10_000;
const firstRetryMs = 250;
const maxRetryMs = 30_000;
/** MCP's "resource not found" error code. */
const resourceNotFound = -32002;
/** JSON-RPC's "method not found": a server without `resources/list`. */
const methodNotFound = -32601;

/** Where a server's diagnostic arose. */
type McpPhase = "connect" | "list" | "subscribe" | "read";

export interface McpServerOptions {
  readonly name: string;
  readonly settings: McpServerSettings;
  readonly sdk: McpSdk;
  readonly registry: Registry;
  readonly diagnostics: Diagnostics;
  /** The working folder a stdio server's relative `cwd` is resolved against. */
  readonly cwd: string;
  /** Largest accepted resource value, UTF-8 bytes of its JSON. */
  readonly maxValueBytes: number;
  readonly now: () => number;
}

/** A live connection. */
interface Link {
  readonly client: Client;
  readonly canSubscribe: boolean;
  readonly instructions: string | undefined;
  /** The URIs whose updates this connection is told of. */
  readonly subscribed: Set<string>;
  /** Negotiated the 2026-07-28 revision: updates and `list_changed` come on one `subscriptions/listen` stream. */
  readonly isModern: boolean;
  /** That stream, if one is open. */
  subscription: McpSubscription | undefined;
  /** The filter (as text) the connection was last made to listen for; no stream is needed for an empty one. */
  listened: string | undefined;
}

/** One exposed resource and what is known of it. */
class ExposedResource {
  readonly key: Key;
  readonly uri: string;
  registration: Registration | undefined;
  /** Counts change notifications (and reconnections); a read is due while `readMark` differs. */
  changedMark = 0;
  /** `changedMark` when the last successful read started; -1 before the first. */
  readMark = -1;
  value: ResourceValue | Absent | undefined;
  readAt = 0;
  ttlMs: number | undefined;
  isFailing = false;
  reading: Promise<void> | undefined;
  readMs: number | undefined;
  reads = 0;

  constructor(key: Key, uri: string) {
    this.key = key;
    this.uri = uri;
  }
}

export class McpServer {
  readonly name: string;
  readonly #options: McpServerOptions;
  readonly #scope: Scope;
  readonly #deadlineMs: number;
  readonly #resources = new Map<string, ExposedResource>();
  readonly #hasWildcard: boolean;
  readonly #secrets: string[];
  #link: Link | undefined;
  #state: McpServerInfo["state"] = "connecting";
  #connecting: Promise<void> | undefined;
  #preparing: Promise<void> | undefined;
  #listing: Promise<void> | undefined;
  #isListDirty = true;
  #retryMs = firstRetryMs;
  #retryTimer: ReturnType<typeof setTimeout> | undefined;
  /** The client of a connection in progress: closing the server ends it (a spawned process too). */
  #connectingClient: Client | undefined;
  /** The resources the settings name (URIs and expanded templates), exposed whatever the server lists. */
  #explicit: Array<{ uri: string; name: string | undefined }> = [];
  /** URIs the settings name without a name: exposed once the server's list gives each its name. */
  #unnamed: string[] = [];
  #clientVersion = "0.0.0";

  constructor(options: McpServerOptions) {
    this.#options = options;
    this.name = options.name;
    this.#scope = new Scope(`mcp server ${options.name}`);
    this.#deadlineMs = options.settings.deadlineMs ?? defaultMcpDeadlineMs;
    const entries = options.settings.resources ?? [];
    this.#hasWildcard = entries.includes("*");
    const settings = options.settings;
    const secretValues = isStdio(settings) ? Object.values(settings.env ?? {}) : Object.values(settings.headers ?? {});
    // Each value, and each longer word of it (the token of `Bearer <token>`), is kept out of diagnostics.
    this.#secrets = [...new Set(secretValues.flatMap((value) => [value, ...value.split(/\s+/).filter((w) => w.length >= 6)]))]
      .filter((value) => value.length >= 3)
      .sort((a, b) => b.length - a.length);
  }

  /** Registers the configured sources and starts connecting (in the background). */
  start(sdkClientVersion: string): void {
    const { settings } = this.#options;
    const explicit: Array<{ uri: string; name: string | undefined }> = [];
    for (const entry of settings.resources ?? []) {
      if (entry === "*") continue;
      if (typeof entry === "string") explicit.push({ uri: entry, name: undefined });
      else if ("uri" in entry) explicit.push({ uri: entry.uri, name: entry.name });
      else explicit.push({ uri: expandTemplate(entry.template, entry.arguments), name: entry.name });
    }
    this.#explicit = explicit;
    this.#unnamed = explicit.flatMap((entry) => (entry.name === undefined ? [entry.uri] : []));
    const registrations: Registration[] = [];
    if (settings.instructions !== false) registrations.push(this.#instructionsRegistration());
    registrations.push(
      ...this.#expose(explicit.flatMap((entry) => (entry.name === undefined ? [] : [{ uri: entry.uri, name: entry.name }]))),
    );
    this.#options.registry.batch((batch) => {
      for (const registration of registrations) batch.register(this.#scope, registration);
    });
    this.#clientVersion = sdkClientVersion;
    this.#startConnecting();
  }

  /**
   * The boundary's work for this server, bounded by its deadline: wait for a connection in
   * progress, list (after `list_changed`) and subscribe, then read every resource that is due.
   * Never rejects; what missed the deadline goes on in the background and is reported.
   * Nothing to do (the usual boundary: connected, subscribed, nothing changed): `undefined`, at once.
   */
  prepare(): Promise<void> | undefined {
    if (this.#preparing === undefined && !this.#hasWork()) return undefined;
    return this.#prepare();
  }

  /** Whether a boundary has anything to wait for or ask this server. */
  #hasWork(): boolean {
    if (this.#state === "closed") return false;
    if (this.#connecting !== undefined) return true;
    const link = this.#link;
    if (link === undefined) return false;
    if (this.#needsList()) return true;
    if (link.isModern && link.listened !== this.#listenFilter(link)) return true;
    const now = this.#options.now();
    for (const resource of this.#resources.values()) {
      if (link.canSubscribe && !link.subscribed.has(resource.uri)) return true;
      if (this.#isDue(resource, link, now)) return true;
    }
    return false;
  }

  async #prepare(): Promise<void> {
    this.#preparing ??= this.#sync().finally(() => {
      this.#preparing = undefined;
    });
    try {
      await withinDeadline(() => this.#preparing, this.#deadlineMs, `MCP server ${this.name}`);
    } catch (error) {
      if (!(error instanceof DeadlineExceeded)) {
        this.#report("read", undefined, messageOf(error));
        return;
      }
      const late = `missed its deadline of ${this.#deadlineMs} ms`;
      if (this.#connecting !== undefined) this.#report("connect", undefined, `connecting ${late}`);
      else if (this.#listing !== undefined) this.#report("list", undefined, `listing resources ${late}`);
      for (const resource of this.#resources.values()) {
        if (resource.reading !== undefined) this.#report("read", resource.key, `read of ${resource.uri} ${late}`);
      }
    }
  }

  /** The server and its resources, for listings. */
  info(): McpServerInfo {
    const link = this.#link;
    return {
      name: this.name,
      transport: isStdio(this.#options.settings) ? "stdio" : "http",
      state: this.#state,
      canSubscribe: link?.canSubscribe ?? false,
      ...(this.#options.settings.instructions === false ? {} : { instructionsKey: instructionsKey(this.name) }),
      resources: [...this.#resources.values()]
        .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
        .map((resource) => ({
          key: resource.key,
          uri: resource.uri,
          state: resource.isFailing
            ? "failed"
            : resource.readMark === -1
              ? "unread"
              : resource.readMark !== resource.changedMark
                ? "changed"
                : "read",
          isSubscribed: link?.subscribed.has(resource.uri) ?? false,
          ...(resource.readMs === undefined ? {} : { readMs: resource.readMs }),
          reads: resource.reads,
        })),
    };
  }

  /** Ends the connection (a stdio server's process with it) and removes the sources. */
  async close(): Promise<void> {
    if (this.#state === "closed") return;
    this.#state = "closed";
    if (this.#retryTimer !== undefined) clearTimeout(this.#retryTimer);
    const link = this.#link;
    this.#link = undefined;
    await this.#connectingClient?.close().catch(() => {});
    await this.#connecting?.catch(() => {});
    await link?.client.close().catch(() => {});
    await this.#scope.close();
  }

  #startConnecting(): void {
    this.#retryTimer = undefined;
    if (this.#state === "closed") return;
    this.#state = "connecting";
    this.#connecting = this.#connect().finally(() => {
      this.#connecting = undefined;
    });
  }

  async #connect(): Promise<void> {
    const { sdk, settings } = this.#options;
    // Over Streamable HTTP the client offers the 2026-07-28 revision and falls back to 2025; over
    // stdio the SDK would probe by spawning the server twice, so stdio speaks 2025 (decision 140).
    const client = new sdk.Client(
      { name: "context-host", version: this.#clientVersion },
      { capabilities: {}, ...(isStdio(settings) ? {} : { versionNegotiation: { mode: "auto" as const } }) },
    );
    client.setNotificationHandler("notifications/resources/updated", (notification) => {
      const resource = this.#resources.get(notification.params.uri);
      if (resource !== undefined) resource.changedMark++;
    });
    client.setNotificationHandler("notifications/resources/list_changed", () => {
      this.#isListDirty = true;
    });
    const transport = isStdio(settings)
      ? new sdk.StdioClientTransport({
          command: settings.command,
          ...(settings.args === undefined ? {} : { args: settings.args }),
          ...(settings.env === undefined ? {} : { env: settings.env }),
          ...(settings.cwd === undefined ? {} : { cwd: path.resolve(this.#options.cwd, settings.cwd) }),
          stderr: "ignore",
        })
      : new sdk.StreamableHTTPClientTransport(new URL(settings.url), {
          ...(settings.headers === undefined ? {} : { requestInit: { headers: settings.headers } }),
          fetch: quietFetch,
        });
    this.#connectingClient = client;
    try {
      const ms = Math.max(this.#deadlineMs, connectDeadlineMs);
      await withinDeadline(() => client.connect(transport, { timeout: ms }), ms, `connecting to MCP server ${this.name}`);
    } catch (error) {
      this.#connectingClient = undefined;
      await client.close().catch(() => {});
      if (this.#state === "closed") return;
      this.#report("connect", undefined, `cannot connect: ${messageOf(error)}`);
      this.#down();
      return;
    }
    this.#connectingClient = undefined;
    if (this.#state === "closed") {
      await client.close().catch(() => {});
      return;
    }
    const link: Link = {
      client,
      canSubscribe: client.getServerCapabilities()?.resources?.subscribe === true,
      instructions: client.getInstructions() || undefined,
      subscribed: new Set(),
      isModern: client.getProtocolEra() === "modern",
      subscription: undefined,
      listened: undefined,
    };
    client.onclose = () => {
      if (this.#link !== link || this.#state === "closed") return;
      this.#link = undefined;
      this.#report("connect", undefined, "the connection closed");
      this.#down();
    };
    this.#link = link;
    this.#state = "connected";
    this.#retryMs = firstRetryMs;
    this.#isListDirty = true;
    // Anything may have changed while disconnected: every resource is read again.
    for (const resource of this.#resources.values()) resource.changedMark++;
    this.#options.diagnostics.resolve((d) => d.origin === "mcp" && d.file === this.#file && d.phase === "connect");
  }

  /**
   * A request failed for want of a connection (not the server's JSON-RPC error, a timeout or
   * a malformed result): over Streamable HTTP nothing else says a server went away. Drop the
   * link and reconnect after the back-off.
   */
  #loseOn(link: Link, error: unknown): void {
    if (!isConnectionFailure(error)) return;
    if (this.#link !== link || this.#state === "closed") return;
    this.#link = undefined;
    this.#report("connect", undefined, "the connection was lost");
    void link.client.close().catch(() => {});
    this.#down();
  }

  /**
   * Sends a request, and once more at once when it failed for want of a connection: a kept-alive
   * socket the server had closed (ECONNRESET) fails the first request after a pause.
   */
  async #request<T>(link: Link, send: () => Promise<T>): Promise<T> {
    try {
      return await send();
    } catch (error) {
      if (!isConnectionFailure(error) || this.#link !== link) throw error;
      return await send();
    }
  }

  /** Down: the sources are unavailable until a reconnection, tried after a growing back-off. */
  #down(): void {
    this.#state = "down";
    this.#retryTimer = setTimeout(() => this.#startConnecting(), this.#retryMs);
    this.#retryTimer.unref();
    this.#retryMs = Math.min(this.#retryMs * 2, maxRetryMs);
  }

  async #sync(): Promise<void> {
    if (this.#connecting !== undefined) await this.#connecting;
    const link = this.#link;
    if (link === undefined) return;
    if (this.#needsList()) {
      this.#listing = this.#relist(link).finally(() => {
        this.#listing = undefined;
      });
      await this.#listing;
    }
    if (link.isModern) {
      await this.#listen(link);
    } else if (link.canSubscribe) {
      await Promise.all(
        [...this.#resources.values()]
          .filter((resource) => !link.subscribed.has(resource.uri))
          .map(async (resource) => {
            try {
              await this.#request(link, () =>
                link.client.subscribeResource({ uri: resource.uri }, { timeout: this.#deadlineMs }),
              );
              link.subscribed.add(resource.uri);
            } catch (error) {
              if (this.#link === link) this.#report("subscribe", resource.key, `cannot subscribe: ${messageOf(error)}`);
              this.#loseOn(link, error);
            }
          }),
      );
    }
    const now = this.#options.now();
    await Promise.all(
      [...this.#resources.values()]
        .filter((resource) => this.#isDue(resource, link, now))
        .map((resource) => {
          resource.reading ??= this.#read(resource, link).finally(() => {
            resource.reading = undefined;
          });
          return resource.reading;
        }),
    );
  }

  /** The `subscriptions/listen` filter a modern connection needs now, as text: `list_changed` with `"*"`, and every exposed URI. */
  #listenFilter(link: Link): string {
    const uris = link.canSubscribe ? [...this.#resources.keys()].sort() : [];
    return JSON.stringify({ resourcesListChanged: this.#hasWildcard, resourceSubscriptions: uris });
  }

  /**
   * Opens the `subscriptions/listen` stream for the current filter (a new one before the old one
   * closes, so no update falls between). A stream the server ends leaves every resource due and
   * the list to be read again: what changed meanwhile was not told.
   */
  async #listen(link: Link): Promise<void> {
    const filter = this.#listenFilter(link);
    if (link.listened === filter) return;
    const wanted = JSON.parse(filter) as { resourcesListChanged: boolean; resourceSubscriptions: string[] };
    const previous = link.subscription;
    if (!wanted.resourcesListChanged && wanted.resourceSubscriptions.length === 0) {
      link.subscription = undefined;
      link.listened = filter;
      link.subscribed.clear();
      await previous?.close().catch(() => {});
      return;
    }
    let subscription: McpSubscription;
    try {
      subscription = await this.#request(link, () =>
        link.client.listen(
          {
            ...(wanted.resourcesListChanged ? { resourcesListChanged: true } : {}),
            ...(wanted.resourceSubscriptions.length === 0 ? {} : { resourceSubscriptions: wanted.resourceSubscriptions }),
          },
          { timeout: this.#deadlineMs },
        ),
      );
    } catch (error) {
      if (this.#link === link) this.#report("subscribe", undefined, `cannot listen: ${messageOf(error)}`);
      this.#loseOn(link, error);
      return;
    }
    link.subscription = subscription;
    link.listened = filter;
    link.subscribed.clear();
    for (const uri of subscription.honoredFilter.resourceSubscriptions ?? []) link.subscribed.add(uri);
    void subscription.closed.then((why) => {
      if (why === "local" || link.subscription !== subscription || this.#link !== link) return;
      link.subscription = undefined;
      link.listened = undefined;
      link.subscribed.clear();
      for (const resource of this.#resources.values()) resource.changedMark++;
      this.#isListDirty = true;
      this.#report("subscribe", undefined, `the server ended the subscription (${why})`);
    });
    await previous?.close().catch(() => {});
  }

  #isDue(resource: ExposedResource, link: Link, now: number): boolean {
    if (resource.isFailing || resource.readMark !== resource.changedMark) return true;
    if (link.subscribed.has(resource.uri)) return false;
    const maxAge = resource.ttlMs ?? this.#options.settings.maxAgeMs ?? 0;
    return now - resource.readAt >= maxAge;
  }

  /** Whether the server's list is to be read: it changed, and the settings want every resource or names for some. */
  #needsList(): boolean {
    return this.#isListDirty && (this.#hasWildcard || this.#unnamed.length > 0);
  }

  async #relist(link: Link): Promise<void> {
    this.#isListDirty = false;
    let listed: Array<{ readonly uri: string; readonly name: string | undefined }>;
    try {
      const result = await this.#request(link, () =>
        link.client.listResources(undefined, { timeout: this.#deadlineMs, cacheMode: "bypass" }),
      );
      listed = result.resources.map((resource) => ({ uri: resource.uri, name: resource.name }));
    } catch (error) {
      this.#isListDirty = true;
      if ((error as { code?: unknown }).code === methodNotFound) {
        // A server that cannot list: the resources the settings name are named by their URIs.
        listed = [];
      } else {
        if (this.#link === link) this.#report("list", undefined, `cannot list resources: ${messageOf(error)}`);
        this.#loseOn(link, error);
        return;
      }
    }
    this.#options.diagnostics.resolve((d) => d.origin === "mcp" && d.file === this.#file && d.phase === "list");
    const offered = this.#hasWildcard ? listed : [];
    const names = new Map(listed.map((resource) => [resource.uri, resource.name]));
    const wanted = new Set([...this.#explicit.map((entry) => entry.uri), ...offered.map((resource) => resource.uri)]);
    const gone = [...this.#resources.values()].filter((resource) => !wanted.has(resource.uri));
    const unnamed = this.#unnamed.splice(0).map((uri) => ({ uri, name: names.get(uri) }));
    const added = this.#expose(
      [...unnamed, ...offered.filter((resource) => !this.#resources.has(resource.uri))].map((resource) => ({
        uri: resource.uri,
        name: resourceKeyName(resource),
      })),
    );
    if (gone.length === 0 && added.length === 0) return;
    this.#options.registry.batch((batch) => {
      for (const resource of gone) {
        if (resource.registration !== undefined) batch.unregister(resource.registration);
      }
      for (const registration of added) batch.register(this.#scope, registration);
    });
    for (const resource of gone) {
      this.#resources.delete(resource.uri);
      if (link.subscribed.delete(resource.uri) && !link.isModern) {
        link.client.unsubscribeResource({ uri: resource.uri }, { timeout: this.#deadlineMs }).catch(() => {});
      }
    }
  }

  /**
   * Makes resources exposed: a key each, `mcp/<server>/<name>` (the name from the settings, or
   * the server's list: `resourceKeyName`), and a registration. In URI order, so that of two
   * resources whose names meet, the first URI keeps the name and the next gets `-2`, `-3`…; a
   * key once given never changes.
   */
  #expose(entries: ReadonlyArray<{ uri: string; name: string }>): Registration[] {
    const taken = new Set([instructionsKey(this.name), ...[...this.#resources.values()].map((resource) => resource.key)]);
    const registrations: Registration[] = [];
    const sorted = [...entries].sort((a, b) => (a.uri < b.uri ? -1 : a.uri > b.uri ? 1 : 0));
    for (const entry of sorted) {
      if (this.#resources.has(entry.uri)) continue;
      const base = `${mcpNamespace}/${this.name}/${entry.name}`;
      let key = base;
      for (let n = 2; taken.has(key); n++) key = `${base}-${n}`;
      taken.add(key);
      const resource = new ExposedResource(key, entry.uri);
      resource.registration = this.#resourceRegistration(resource);
      this.#resources.set(entry.uri, resource);
      registrations.push(resource.registration);
    }
    return registrations;
  }

  async #read(resource: ExposedResource, link: Link): Promise<void> {
    const mark = resource.changedMark;
    const started = this.#options.now();
    resource.reads++;
    let result: Awaited<ReturnType<Client["readResource"]>>;
    try {
      result = await this.#request(link, () =>
        link.client.readResource({ uri: resource.uri }, { timeout: this.#deadlineMs, cacheMode: "bypass" }),
      );
    } catch (error) {
      if ((error as { code?: unknown }).code === resourceNotFound) {
        this.#admitRead(resource, mark, started, absent, undefined);
        return;
      }
      resource.isFailing = true;
      if (this.#link === link) this.#report("read", resource.key, `cannot read ${resource.uri}: ${messageOf(error)}`);
      this.#loseOn(link, error);
      return;
    }
    const contents: Parameters<typeof resourceValueOf>[1] = [];
    for (const part of result.contents) {
      if (!("text" in part) || typeof part.text !== "string") {
        this.#report("read", resource.key, `${resource.uri} is binary (${part.mimeType ?? "no type"}): not a source`);
        this.#admitRead(resource, mark, started, absent, undefined);
        return;
      }
      contents.push({ uri: part.uri, ...(part.mimeType === undefined ? {} : { mimeType: part.mimeType }), text: part.text });
    }
    const value = resourceValueOf(resource.uri, contents);
    const bytes = Buffer.byteLength(JSON.stringify(value));
    if (bytes > this.#options.maxValueBytes) {
      resource.isFailing = true;
      this.#report("read", resource.key, `${resource.uri} is ${bytes} bytes, over the limit of ${this.#options.maxValueBytes}`);
      return;
    }
    const ttlMs = (result as { ttlMs?: unknown }).ttlMs;
    this.#admitRead(resource, mark, started, value, typeof ttlMs === "number" && ttlMs >= 0 ? ttlMs : undefined);
  }

  #admitRead(
    resource: ExposedResource,
    mark: number,
    started: number,
    value: ResourceValue | Absent,
    ttlMs: number | undefined,
  ): void {
    const now = this.#options.now();
    resource.value = value;
    resource.readMark = mark;
    resource.readAt = now;
    resource.readMs = now - started;
    resource.ttlMs = ttlMs;
    resource.isFailing = false;
    if (value !== absent) {
      this.#options.diagnostics.resolve((d) => d.origin === "mcp" && d.file === this.#file && d.key === resource.key);
    }
  }

  /** Observation: no I/O; what `prepare` read, or unavailable while down, failing or known to be stale. */
  #observe(resource: ExposedResource): ResourceValue | Absent | Unavailable {
    if (this.#link === undefined || resource.isFailing || resource.readMark !== resource.changedMark) return unavailable;
    return resource.value ?? unavailable;
  }

  #resourceRegistration(resource: ExposedResource): Registration {
    const context = contain(
      {
        key: resource.key,
        schema: ResourceValue,
        load: () => this.#observe(resource),
        ...resourceRenderers(this.name, resource.uri),
      },
      { report: (fault) => this.#report("read", fault.key, messageOf(fault.error)), maxTextLength: this.#options.maxValueBytes },
    );
    return { key: resource.key, origin: "plugin", load: () => context };
  }

  #instructionsRegistration(): Registration {
    const key = instructionsKey(this.name);
    const context = contain(
      {
        key,
        schema: InstructionsValue,
        load: () => (this.#link === undefined ? unavailable : (this.#link.instructions ?? absent)),
        ...instructionsRenderers(this.name),
      },
      { report: (fault) => this.#report("read", fault.key, messageOf(fault.error)), maxTextLength: this.#options.maxValueBytes },
    );
    return { key, origin: "plugin", load: () => context };
  }

  /** The diagnostics' `file`: the server's setting. */
  get #file(): string {
    return `mcpServers.${this.name}`;
  }

  #report(phase: McpPhase, key: Key | undefined, message: string): void {
    let safe = message;
    for (const secret of this.#secrets) safe = safe.replaceAll(secret, "***");
    this.#options.diagnostics.report({
      origin: "mcp",
      plugin: mcpNamespace,
      file: this.#file,
      phase,
      ...(key === undefined ? {} : { key }),
      message: safe,
    });
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
