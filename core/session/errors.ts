// Owns the named errors of the session layer (decision 011): each names the session (or
// the file, tool, location) and what is wrong with it, built from one options object.

import { ContextHostError, messageOf } from "../base/errors.ts";

/** No session with that id. */
export class SessionNotFound extends ContextHostError {
  readonly sessionId: string;
  constructor(options: { readonly sessionId: string }) {
    super(`session ${JSON.stringify(options.sessionId)} not found`);
    this.sessionId = options.sessionId;
  }
}

/** A stored row cannot be read back (a corrupt snapshot, an unknown role): names the session and the row. */
export class SessionCorrupt extends ContextHostError {
  readonly sessionId: string;
  constructor(options: { readonly sessionId: string; readonly reason: string; readonly cause?: unknown }) {
    super(`session ${options.sessionId}: ${options.reason}`, options.cause === undefined ? undefined : { cause: options.cause });
    this.sessionId = options.sessionId;
  }
}

/** Another runtime committed first; re-read and plan again. */
export class RevisionConflict extends ContextHostError {
  readonly sessionId: string;
  readonly expected: number;
  constructor(options: { readonly sessionId: string; readonly expected: number }) {
    super(`session ${options.sessionId} changed since revision ${options.expected}: another runtime committed first`);
    this.sessionId = options.sessionId;
    this.expected = options.expected;
  }
}

/** The session names a provider the host does not have. */
export class ProviderNotFound extends ContextHostError {
  readonly provider: string;
  constructor(options: { readonly provider: string }) {
    super(`provider ${JSON.stringify(options.provider)} not found: register it in createHost({ providers })`);
    this.provider = options.provider;
  }
}

/**
 * A step's `signal` was aborted while its provider call ran: nothing of the reply is stored;
 * what the boundary admitted stays, and the next step sends the same request again.
 */
export class StepAborted extends ContextHostError {
  readonly sessionId: string;
  constructor(options: { readonly sessionId: string; readonly cause: unknown }) {
    super(`session ${options.sessionId}: the step was aborted during its provider call; the next step sends the request again`, {
      cause: options.cause,
    });
    this.sessionId = options.sessionId;
  }
}

/**
 * The host is closing: a step asked for after `close()` began is refused
 * (`isAbandoned` false), and a step still running when the close's bound passed is
 * abandoned (`isAbandoned` true): its provider call is aborted, nothing of its reply is
 * stored, its lease is released, and the next step (here or in another process) sends the
 * same request again.
 */
export class HostClosed extends ContextHostError {
  readonly sessionId: string;
  readonly isAbandoned: boolean;
  constructor(options: { readonly sessionId: string; readonly isAbandoned: boolean; readonly cause?: unknown }) {
    super(
      options.isAbandoned
        ? `session ${options.sessionId}: the host closed before this step ended (closeTimeoutMs passed); its provider call was aborted and nothing of its reply is stored; the next step sends the request again`
        : `session ${options.sessionId}: the host is closing; it takes no new step`,
      options.cause === undefined ? undefined : { cause: options.cause },
    );
    this.sessionId = options.sessionId;
    this.isAbandoned = options.isAbandoned;
  }
}

/** A session operation that cannot run in the session's current state (e.g. compacting while a reply is awaited). */
export class SessionBusy extends ContextHostError {
  readonly sessionId: string;
  constructor(options: { readonly sessionId: string; readonly reason: string }) {
    super(`session ${options.sessionId}: ${options.reason}`);
    this.sessionId = options.sessionId;
  }
}

/** Boundaries of one session kept conflicting with other runtimes' commits; nothing more was admitted. */
export class BoundaryContended extends ContextHostError {
  readonly sessionId: string;
  readonly rounds: number;
  constructor(options: { readonly sessionId: string; readonly rounds: number }) {
    super(`session ${options.sessionId}: gave up after ${options.rounds} boundaries that conflicted with other runtimes`);
    this.sessionId = options.sessionId;
    this.rounds = options.rounds;
  }
}

/** A tool's input is not what the tool accepts; names the tool and the field. */
export class ToolInputInvalid extends ContextHostError {
  readonly tool: string;
  readonly field: string;
  constructor(options: { readonly tool: string; readonly field: string; readonly reason: string }) {
    super(`${options.tool}: invalid input at ${options.field || "/"}: ${options.reason}`);
    this.tool = options.tool;
    this.field = options.field;
  }
}

/** A tool asked for project files on a host that gives tools none. */
export class ProjectFilesUnavailable extends ContextHostError {
  readonly sessionId: string;
  constructor(options: { readonly sessionId: string }) {
    super(`session ${options.sessionId}: this host gives tools no project file access`);
    this.sessionId = options.sessionId;
  }
}

/** A store's schema (a SQLite file's, a PostgreSQL database's) is newer than this context-host can read. */
export class StoreSchemaNewer extends ContextHostError {
  /** The SQLite file, or the PostgreSQL database and schema. */
  readonly file: string;
  readonly version: number;
  readonly supported: number;
  constructor(options: { readonly file: string; readonly version: number; readonly supported: number }) {
    super(`${options.file}: schema version ${options.version} is newer than this context-host (${options.supported})`);
    this.file = options.file;
    this.version = options.version;
    this.supported = options.supported;
  }
}

/**
 * A provider reply that is not a reply: an adapter found the API's answer outside its
 * documented format (`url` set), or the session runtime found the reply outside the
 * Provider port's schema (`sessionId` and `field` set). Nothing of it was admitted.
 */
export class ProviderReplyInvalid extends ContextHostError {
  readonly provider: string;
  readonly url: string | undefined;
  readonly sessionId: string | undefined;
  /** JSON Pointer of the offending field, `/` for the reply itself. */
  readonly field: string;
  readonly reason: string;
  constructor(options: {
    readonly provider: string;
    readonly url?: string;
    readonly sessionId?: string;
    readonly field?: string;
    readonly reason: string;
    readonly cause?: unknown;
  }) {
    const field = options.field || "/";
    const where = options.url === undefined ? JSON.stringify(options.provider) : `${options.provider} at ${options.url}`;
    const message =
      options.sessionId === undefined
        ? `${where} sent an invalid reply: ${options.reason}`
        : `session ${options.sessionId}: the reply of provider ${where} is invalid at ${field}: ${options.reason}; nothing of it was admitted`;
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.provider = options.provider;
    this.url = options.url;
    this.sessionId = options.sessionId;
    this.field = field;
    this.reason = options.reason;
  }
}

/** Text that is not well-formed (a lone surrogate): it would be stored and sent altered, so it is refused. */
export class TextNotWellFormed extends ContextHostError {
  readonly sessionId: string;
  readonly what: string;
  readonly index: number;
  constructor(options: { readonly sessionId: string; readonly what: string; readonly index: number }) {
    super(
      `session ${options.sessionId}: the ${options.what} is not well-formed text (a lone surrogate at index ${options.index}); it would be altered when stored or sent`,
    );
    this.sessionId = options.sessionId;
    this.what = options.what;
    this.index = options.index;
  }
}

/** A prompt the host will not admit (empty); names the session. */
export class PromptInvalid extends ContextHostError {
  readonly sessionId: string;
  constructor(options: { readonly sessionId: string; readonly reason: string }) {
    super(`prompt for session ${options.sessionId}: ${options.reason}`);
    this.sessionId = options.sessionId;
  }
}

/** Something over one of the host's size limits (`limits` of createHost): names what, its size and the limit. */
export class SizeLimitExceeded extends ContextHostError {
  readonly sessionId: string;
  /** `prompt`, or `source <key>`. */
  readonly what: string;
  readonly limit: "promptBytes" | "sourceValueBytes" | "toolResultBytes";
  readonly bytes: number;
  readonly maxBytes: number;
  constructor(options: {
    readonly sessionId: string;
    readonly what: string;
    readonly limit: "promptBytes" | "sourceValueBytes" | "toolResultBytes";
    readonly bytes: number;
    readonly maxBytes: number;
  }) {
    super(
      `session ${options.sessionId}: the ${options.what} is ${options.bytes} bytes, over the limit of ${options.maxBytes} (limits.${options.limit})`,
    );
    this.sessionId = options.sessionId;
    this.what = options.what;
    this.limit = options.limit;
    this.bytes = options.bytes;
    this.maxBytes = options.maxBytes;
  }
}

/** A session location that is not an absolute path of an existing folder. */
export class LocationInvalid extends ContextHostError {
  readonly location: string;
  constructor(options: { readonly location: string; readonly reason: string }) {
    super(`location ${JSON.stringify(options.location)}: ${options.reason}`);
    this.location = options.location;
  }
}

/** The store's file was deleted or replaced while the host ran: writing on would lose them. Names the file. */
export class StoreFileChanged extends ContextHostError {
  readonly file: string;
  constructor(options: { readonly file: string; readonly reason: string }) {
    super(`${options.file}: ${options.reason} while the host had it open; nothing more is written to it`);
    this.file = options.file;
  }
}

/** Another process held the store's write lock for longer than the bounded wait. */
export class StoreBusy extends ContextHostError {
  readonly file: string;
  readonly waitedMs: number;
  constructor(options: { readonly file: string; readonly waitedMs: number; readonly operation: string }) {
    super(`${options.file}: ${options.operation} waited ${options.waitedMs} ms for another process's write lock and gave up`);
    this.file = options.file;
    this.waitedMs = options.waitedMs;
  }
}

/**
 * The session store cannot live where it was told to: a file stands where a folder of its path
 * should be, or a folder where its file should be. Names the place as the user gave it (the
 * data folder, or the store's file), what stands in the way, and what to do.
 */
export class StorePathUnusable extends ContextHostError {
  /** The data folder or the store's file, as given. */
  readonly path: string;
  /** What stands in the way: a file where a folder should be, or a folder where the store's file should be. */
  readonly obstacle: string;
  constructor(options: {
    readonly path: string;
    readonly what: "data folder" | "session store file";
    readonly obstacle: string;
    readonly isFolder: boolean;
  }) {
    const { path, what, obstacle } = options;
    const problem = options.isFolder
      ? `${obstacle} is a folder, where the session store's file should be`
      : `${obstacle} is a file, not a folder`;
    const other = what === "data folder" ? "choose another data folder" : "give the store another file";
    super(`${what} ${path}: ${problem} — move it away, or ${other}`);
    this.path = path;
    this.obstacle = obstacle;
  }
}

/** SQLite failed; names the file and the operation, with SQLite's error as the cause and, when known, what to do. */
export class StoreFailed extends ContextHostError {
  readonly file: string;
  readonly operation: string;
  constructor(options: { readonly file: string; readonly operation: string; readonly cause: unknown; readonly advice?: string }) {
    const reason = options.cause instanceof Error ? options.cause.message : String(options.cause);
    const advice = options.advice === undefined ? "" : ` — ${options.advice}`;
    super(`${options.file}: ${options.operation} failed: ${reason}${advice}`, { cause: options.cause });
    this.file = options.file;
    this.operation = options.operation;
  }
}

/** The PostgreSQL database cannot be reached or refused a statement; names the database and what was being done. */
export class StoreUnavailable extends ContextHostError {
  readonly database: string;
  constructor(options: { readonly database: string; readonly doing: string; readonly cause: unknown }) {
    super(`session store ${options.database}: ${options.doing} failed: ${messageOf(options.cause)}`, { cause: options.cause });
    this.database = options.database;
  }
}

/** The PostgreSQL client package, an optional peer dependency. */
export const postgresClientPackage = "pg";

/** A PostgreSQL store is opened, and the `pg` package is not installed. */
export class PostgresClientMissing extends ContextHostError {
  constructor(options: { readonly opening: string; readonly cause: unknown }) {
    super(`${options.opening} needs the PostgreSQL client: install it with \`npm install ${postgresClientPackage}@^8.23.1\``, {
      cause: options.cause,
    });
  }
}

/** `listSessions(store)` on a store that does not implement the optional `SessionStore.listSessions`. */
export class StoreCannotList extends ContextHostError {
  readonly store: string;
  constructor(options: { readonly store: string }) {
    super(
      `${options.store} cannot list its sessions: it does not implement SessionStore.listSessions (optional; both shipped stores have it)`,
    );
    this.store = options.store;
  }
}
