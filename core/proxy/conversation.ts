// Owns which engine session a client's request belongs to, and where it works. A session
// is always inside the namespace of the client's credential (a digest of it), so one key
// can neither read nor extend another's session by naming its id. Inside it, the client's
// session (our header, else the id a known agent sends, else none) holds conversations:
// each distinct opening (the tools it offers and its first history item, compared without
// cache markers) is its own engine session, so a side request (a title, a summary, a
// sub-agent) never starts a new epoch for the main one.

import { createHash } from "node:crypto";
import { statSync } from "node:fs";
import path from "node:path";
import { RecentMap } from "../base/recent-map.ts";
import { checkLocation } from "../session/runtime.ts";
import { canonicalJson, digestOf } from "./canonical.ts";
import type { ConversationRequest } from "./wire.ts";

/** Headers the proxy reads, lower case; none of them goes upstream. */
export const proxyHeaders = {
  session: "x-context-host-session",
  location: "x-context-host-location",
  token: "x-context-host-token",
} as const;

/** Headers known agents name their session with, in the order they are read. */
const agentSessionHeaders = ["x-claude-code-session-id", "session_id", "session-id", "conversation_id", "x-session-id"];

type Headers = Readonly<Record<string, string | string[] | undefined>>;

const first = (value: string | string[] | undefined): string | undefined => (Array.isArray(value) ? value[0] : value);
const shortDigest = (text: string, length: number) => createHash("sha256").update(text).digest("hex").slice(0, length);

/** The digest that namespaces a client's sessions: of its API key or bearer token; `anonymous` without one. */
export function credentialNamespace(headers: Headers): string {
  const credential =
    first(headers["x-api-key"]) ?? first(headers.authorization) ?? first(headers["api-key"]) ?? first(headers["x-goog-api-key"]);
  return credential === undefined || credential === "" ? "anonymous" : shortDigest(`credential\u0000${credential}`, 20);
}

/** The client's own session id: our header, else a known agent's header, else what the body carries. */
export function clientSessionOf(headers: Headers, request: ConversationRequest): string | undefined {
  const named = first(headers[proxyHeaders.session]);
  if (named !== undefined && named !== "") return named;
  for (const header of agentSessionHeaders) {
    const value = first(headers[header]);
    if (value !== undefined && value !== "") return value;
  }
  return request.clientSessionId;
}

/** The digest of a conversation's opening: the tools it offers and its first history item. */
export function openingOf(request: ConversationRequest): string {
  const firstIndex = request.history[0];
  const opening = firstIndex === undefined ? "" : canonicalJson(request.items[firstIndex]);
  return digestOf([request.toolNames.join("\u0001"), opening]);
}

/** The engine session of a request: `proxy/<credential>/<client session>/<opening>`. */
export function conversationSessionId(
  namespace: string,
  clientSession: string | undefined,
  request: ConversationRequest,
): string {
  const client = clientSession === undefined ? "-" : shortDigest(clientSession, 16);
  return `proxy/${namespace}/${client}/${openingOf(request).slice(0, 24)}`;
}

// Where known agents state their working folder: "Working directory: /x" (Claude Code,
// opencode), "Current working directory: /x" (pi), `<cwd>/x</cwd>` (Codex).
const folderStatements = [
  /^[ \t-]*(?:Primary |Current )?[Ww]orking directory:[ \t]*(\/[^\n<]*?)[ \t]*$/m,
  /<cwd>[ \t]*(\/[^<\n]+?)[ \t]*<\/cwd>/,
];

/**
 * The folders requests named lately, each checked at most once a second: a stat per
 * request costs more than the rest of reading where it runs. A folder removed meanwhile is
 * noticed within the second. At most `limit` are kept, the oldest forgotten first.
 */
export class KnownFolders {
  /** Each folder checked lately: whether it was one, and when (the `now` clock's ms). */
  readonly #checked: RecentMap<string, { readonly isFolder: boolean; readonly at: number }>;
  readonly #now: () => number;

  constructor(now: () => number = Date.now, limit = 1024) {
    this.#now = now;
    this.#checked = new RecentMap(limit);
  }

  /** Whether `candidate` is an absolute path of an existing folder. */
  isFolder(candidate: string): boolean {
    const known = this.#fresh(candidate);
    if (known !== undefined) return known;
    let isFolder: boolean;
    try {
      isFolder = path.isAbsolute(candidate) && statSync(candidate).isDirectory();
    } catch {
      isFolder = false;
    }
    this.#remember(candidate, isFolder);
    return isFolder;
  }

  /** `checkLocation`: `LocationInvalid` unless `location` is an absolute path of an existing folder. */
  check(location: string): string {
    if (this.#fresh(location) === true) return location;
    checkLocation(location);
    this.#remember(location, true);
    return location;
  }

  /** What was found of `folder` within the last second; `undefined` when not checked since. */
  #fresh(folder: string): boolean | undefined {
    const checked = this.#checked.get(folder);
    return checked !== undefined && this.#now() - checked.at < 1000 ? checked.isFolder : undefined;
  }

  #remember(folder: string, isFolder: boolean): void {
    this.#checked.set(folder, { isFolder, at: this.#now() });
  }
}

/** The folder an agent states it works in, when it states an existing one. */
export function statedFolderOf(text: string, folders: KnownFolders = new KnownFolders()): string | undefined {
  for (const statement of folderStatements) {
    const found = statement.exec(text)?.[1];
    if (found !== undefined && folders.isFolder(found)) return path.normalize(found);
  }
  return undefined;
}

/**
 * Where a request's session works: our header (checked: `LocationInvalid` when it names no
 * existing folder), else the folder the agent states (when it exists), else `fallback`
 * (checked once, when the proxy started).
 */
export function locationOf(
  headers: Headers,
  request: ConversationRequest,
  fallback: string,
  folders: KnownFolders = new KnownFolders(),
): string {
  const named = first(headers[proxyHeaders.location]);
  if (named !== undefined && named !== "") return folders.check(named);
  return statedFolderOf(request.statedText, folders) ?? fallback;
}
