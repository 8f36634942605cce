// Owns one MCP server as a set of Context Sources: the resources it exposes (one registration
// each, `mcp/<server>/<name>`), its instructions, and what a boundary does with them, over its
// connection (`McpConnection`, which reconnects with back-off). A notification only marks a
// resource changed; `prepare`, run at a Safe Provider-Turn Boundary before the sources are
// observed, lists, subscribes and reads what is due within the server's deadline; observation
// then reads nothing and answers from what was read, so an unchanged resource costs no read.

import type { Client } from "@modelcontextprotocol/client";
import { DeadlineExceeded, withinDeadline } from "../base/deadline.ts";
import type { Diagnostics } from "../base/diagnostics.ts";
import { messageOf } from "../base/errors.ts";
import { Scope } from "../base/scope.ts";
import type { Registration, Registry } from "../registry/registry.ts";
import { type Absent, absent, contain, type Key, type Unavailable, unavailable } from "../system-context/index.ts";
import { type ListenFilter, McpConnection } from "./connection.ts";
import { type Link, listedState } from "./connection-state.ts";
import { ExposedResource } from "./exposed-resource.ts";
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
  /** The client's version, as `initialize` tells the server. */
  readonly clientVersion: string;
  /** Largest accepted resource value, UTF-8 bytes of its JSON. */
  readonly maxValueBytes: number;
  readonly now: () => number;
}

export class McpServer {
  readonly name: string;
  readonly #options: McpServerOptions;
  readonly #scope: Scope;
  readonly #deadlineMs: number;
  readonly #connection: McpConnection;
  readonly #resources = new Map<string, ExposedResource>();
  readonly #hasWildcard: boolean;
  readonly #secrets: string[];
  #preparing: Promise<void> | undefined;
  #listing: Promise<void> | undefined;
  #isListDirty = true;
  /** The resources the settings name (URIs and expanded templates), exposed whatever the server lists. */
  #explicit: Array<{ uri: string; name: string | undefined }> = [];
  /** URIs the settings name without a name: exposed once the server's list gives each its name. */
  #unnamed: string[] = [];

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
    this.#connection = new McpConnection({
      name: options.name,
      settings,
      sdk: options.sdk,
      cwd: options.cwd,
      clientVersion: options.clientVersion,
      deadlineMs: this.#deadlineMs,
      events: {
        connected: () => this.#connected(),
        resourceUpdated: (uri) => this.#resources.get(uri)?.markChanged(),
        listChanged: () => this.#listChanged(),
        listenEnded: (why) => this.#listenEnded(why),
        wentDown: (reason) => this.#report("connect", undefined, reason),
      },
    });
  }

  /** Registers the configured sources and starts connecting (in the background). */
  start(): void {
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
    this.#connection.start();
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
    const state = this.#connection.state;
    if (state.kind === "connecting") return true;
    if (state.kind !== "connected") return false;
    const { link, subscribed } = state;
    if (this.#needsList()) return true;
    if (link.isModern && !this.#connection.listensFor(link, this.#listenFilter(link))) return true;
    const now = this.#options.now();
    for (const resource of this.#resources.values()) {
      if (link.canSubscribe && !subscribed.has(resource.uri)) return true;
      if (this.#isDue(resource, subscribed, now)) return true;
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
      this.#reportLate(`missed its deadline of ${this.#deadlineMs} ms`);
    }
  }

  /** What a boundary's deadline left running: the connection, the list, or each read. */
  #reportLate(late: string): void {
    if (this.#connection.state.kind === "connecting") this.#report("connect", undefined, `connecting ${late}`);
    else if (this.#listing !== undefined) this.#report("list", undefined, `listing resources ${late}`);
    for (const resource of this.#resources.values()) {
      if (resource.isReading) this.#report("read", resource.key, `read of ${resource.uri} ${late}`);
    }
  }

  /** The server and its resources, for listings. */
  info(): McpServerInfo {
    const state = this.#connection.state;
    const live = state.kind === "connected" ? state : undefined;
    return {
      name: this.name,
      transport: isStdio(this.#options.settings) ? "stdio" : "http",
      state: listedState(state),
      canSubscribe: live?.link.canSubscribe ?? false,
      ...(this.#options.settings.instructions === false ? {} : { instructionsKey: instructionsKey(this.name) }),
      resources: [...this.#resources.values()]
        .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
        .map((resource) => resource.info(live?.subscribed.has(resource.uri) ?? false)),
    };
  }

  /** Ends the connection (a stdio server's process with it) and removes the sources. */
  async close(): Promise<void> {
    if (this.#connection.state.kind === "closed") return;
    await this.#connection.close();
    await this.#scope.close();
  }

  /** A link is live (again): its list is to be read, and anything may have changed while there was none. */
  #connected(): void {
    this.#isListDirty = true;
    for (const resource of this.#resources.values()) resource.markChanged();
    this.#options.diagnostics.resolve((d) => d.origin === "mcp" && d.file === this.#file && d.phase === "connect");
  }

  #listChanged(): void {
    this.#isListDirty = true;
  }

  /** The server ended the listen stream: what changed meanwhile was not told, so every resource and the list are due. */
  #listenEnded(why: string): void {
    for (const resource of this.#resources.values()) resource.markChanged();
    this.#isListDirty = true;
    this.#report("subscribe", undefined, `the server ended the subscription (${why})`);
  }

  async #sync(): Promise<void> {
    const state = this.#connection.state;
    if (state.kind === "connecting") await state.attempt;
    const link = this.#connection.link;
    if (link === undefined) return;
    if (this.#needsList()) {
      this.#listing = this.#relist(link).finally(() => {
        this.#listing = undefined;
      });
      await this.#listing;
    }
    if (link.isModern) await this.#listen(link);
    else if (link.canSubscribe) await this.#subscribeAll(link);
    const subscribed = this.#connection.subscribedOn(link);
    const now = this.#options.now();
    await Promise.all(
      [...this.#resources.values()]
        .filter((resource) => this.#isDue(resource, subscribed, now))
        .map((resource) => resource.readOnce((mark) => this.#read(resource, mark, link))),
    );
  }

  /** Subscribes a 2025 link to every exposed resource it is not subscribed to. */
  async #subscribeAll(link: Link): Promise<void> {
    const subscribed = this.#connection.subscribedOn(link);
    await Promise.all(
      [...this.#resources.values()]
        .filter((resource) => !subscribed.has(resource.uri))
        .map((resource) => this.#subscribe(link, resource)),
    );
  }

  async #subscribe(link: Link, resource: ExposedResource): Promise<void> {
    try {
      await this.#connection.subscribe(link, resource.uri);
    } catch (error) {
      if (this.#connection.isLive(link)) this.#report("subscribe", resource.key, `cannot subscribe: ${messageOf(error)}`);
      this.#connection.loseOn(link, error);
    }
  }

  /**
   * Makes a modern link listen for what it needs now. A stream the server ends leaves every
   * resource due and the list to be read again (`#listenEnded`).
   */
  async #listen(link: Link): Promise<void> {
    try {
      await this.#connection.listen(link, this.#listenFilter(link));
    } catch (error) {
      if (this.#connection.isLive(link)) this.#report("subscribe", undefined, `cannot listen: ${messageOf(error)}`);
      this.#connection.loseOn(link, error);
    }
  }

  /** The `subscriptions/listen` filter a modern link needs now: `list_changed` with `"*"`, and every exposed URI. */
  #listenFilter(link: Link): ListenFilter {
    const uris = link.canSubscribe ? [...this.#resources.keys()].sort() : [];
    return { resourcesListChanged: this.#hasWildcard, resourceSubscriptions: uris };
  }

  #isDue(resource: ExposedResource, subscribed: ReadonlySet<string>, now: number): boolean {
    return resource.isDue(subscribed.has(resource.uri), this.#options.settings.maxAgeMs ?? 0, now);
  }

  /** Whether the server's list is to be read: it changed, and the settings want every resource or names for some. */
  #needsList(): boolean {
    return this.#isListDirty && (this.#hasWildcard || this.#unnamed.length > 0);
  }

  async #relist(link: Link): Promise<void> {
    this.#isListDirty = false;
    let listed: Array<{ readonly uri: string; readonly name: string | undefined }>;
    try {
      const result = await this.#connection.request(link, () =>
        link.client.listResources(undefined, { timeout: this.#deadlineMs, cacheMode: "bypass" }),
      );
      listed = result.resources.map((resource) => ({ uri: resource.uri, name: resource.name }));
    } catch (error) {
      this.#isListDirty = true;
      if ((error as { code?: unknown }).code === methodNotFound) {
        // A server that cannot list: the resources the settings name are named by their URIs.
        listed = [];
      } else {
        if (this.#connection.isLive(link)) this.#report("list", undefined, `cannot list resources: ${messageOf(error)}`);
        this.#connection.loseOn(link, error);
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
      for (const resource of gone) batch.unregister(resource.registration);
      for (const registration of added) batch.register(this.#scope, registration);
    });
    const goneUris = gone.map((resource) => resource.uri);
    for (const uri of goneUris) this.#resources.delete(uri);
    this.#connection.unsubscribe(link, goneUris);
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
      const resource = new ExposedResource(key, entry.uri, (exposed) => this.#resourceRegistration(exposed));
      this.#resources.set(entry.uri, resource);
      registrations.push(resource.registration);
    }
    return registrations;
  }

  /** Reads a resource as of change `mark` and admits what it holds; a failure leaves it failing. */
  async #read(resource: ExposedResource, mark: number, link: Link): Promise<void> {
    const started = this.#options.now();
    let result: Awaited<ReturnType<Client["readResource"]>>;
    try {
      result = await this.#connection.request(link, () =>
        link.client.readResource({ uri: resource.uri }, { timeout: this.#deadlineMs, cacheMode: "bypass" }),
      );
    } catch (error) {
      if ((error as { code?: unknown }).code === resourceNotFound) {
        this.#admitRead(resource, mark, started, absent, undefined);
        return;
      }
      resource.fail();
      if (this.#connection.isLive(link)) this.#report("read", resource.key, `cannot read ${resource.uri}: ${messageOf(error)}`);
      this.#connection.loseOn(link, error);
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
      resource.fail();
      this.#report("read", resource.key, `${resource.uri} is ${bytes} bytes, over the limit of ${this.#options.maxValueBytes}`);
      return;
    }
    const ttlMs = (result as { ttlMs?: unknown }).ttlMs;
    this.#admitRead(resource, mark, started, value, typeof ttlMs === "number" && ttlMs >= 0 ? ttlMs : undefined);
  }

  #admitRead(
    resource: ExposedResource,
    mark: number,
    startedAt: number,
    value: ResourceValue | Absent,
    ttlMs: number | undefined,
  ): void {
    resource.admit(mark, { value, ttlMs, startedAt, endedAt: this.#options.now() });
    if (value !== absent) {
      this.#options.diagnostics.resolve((d) => d.origin === "mcp" && d.file === this.#file && d.key === resource.key);
    }
  }

  #resourceRegistration(resource: ExposedResource): Registration {
    const context = contain(
      {
        key: resource.key,
        schema: ResourceValue,
        // Observation: no I/O; what `prepare` read, or unavailable while down, failing or known to be stale.
        load: () => (this.#connection.link === undefined ? unavailable : resource.observed()),
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
        load: () => this.#instructions(),
        ...instructionsRenderers(this.name),
      },
      { report: (fault) => this.#report("read", fault.key, messageOf(fault.error)), maxTextLength: this.#options.maxValueBytes },
    );
    return { key, origin: "plugin", load: () => context };
  }

  /** The live link's instructions: absent when the server gave none, unavailable while down. */
  #instructions(): string | Absent | Unavailable {
    const link = this.#connection.link;
    if (link === undefined) return unavailable;
    return link.instructions ?? absent;
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
