// Owns the named errors of the session layer (decision 011): each names the session (or
// the file, tool, location) and what is wrong with it, built from one options object.

import { ContextHostError } from "../base/errors.ts";

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

/** A SQLite file's schema is newer than this context-host can read. */
export class StoreSchemaNewer extends ContextHostError {
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
