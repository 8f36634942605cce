/**
 * context-host/store: the durable session store. `SessionStore` is the interface the
 * host's session runtime is built on (pass one as `createHost({ store })`);
 * `SqliteSessionStore` is the default, one SQLite file. The errors are the ones a
 * store raises.
 *
 * @module
 */

export { SqliteSessionStore } from "./session/store/sqlite.ts";
export {
  type BoundaryCommit,
  CorruptSession,
  type EpochReason,
  type EpochRecord,
  type MessageRole,
  type PendingPrompt,
  RevisionConflict,
  type SessionRecord,
  type SessionStore,
  type StoredMessage,
  UnknownSession,
} from "./session/store/store.ts";
export type { DiscoveryLog } from "./sources/instructions/service.ts";
