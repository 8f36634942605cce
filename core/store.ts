/**
 * context-host/store: the durable session store. `SessionStore` is the interface the
 * host's session runtime is built on (pass one as `createHost({ store })`);
 * `SqliteSessionStore` is the default, one SQLite file. The errors are the ones a
 * store raises; `PostgresClientMissing` when a PostgreSQL store opens without `pg`
 * installed (an optional peer dependency).
 *
 * @module
 */

export { storedRequests } from "./host/stored-requests.ts";
export {
  PostgresClientMissing,
  RevisionConflict,
  SessionCorrupt,
  SessionNotFound,
  StoreBusy,
  StoreCannotList,
  StoreFailed,
  StoreFileChanged,
  StorePathUnusable,
  StoreSchemaNewer,
} from "./session/errors.ts";
export { PostgresSessionStore, type PostgresSessionStoreOptions, StoreUnavailable } from "./session/store/postgres.ts";
export { SqliteSessionStore, sessionsFile } from "./session/store/sqlite.ts";
export type {
  BoundaryCommit,
  BoundaryCommitted,
  EpochReason,
  EpochRecord,
  InFlightLease,
  MessageRole,
  PendingPrompt,
  ReplyCommitted,
  SeenHistory,
  SessionRecord,
  SessionStore,
  SessionWhere,
  StoredMessage,
} from "./session/store/store.ts";
export { listSessions } from "./session/store/store.ts";
export type { DiscoveryLog } from "./sources/instructions/service.ts";
