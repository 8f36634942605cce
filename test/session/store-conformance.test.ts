// The SQLite session store against the session store conformance suite: on a real file
// (reopened for durability) and in memory (":memory:", which keeps nothing to reopen).

import { describeStoreConformance } from "../../core/conformance.ts";
import { SqliteSessionStore, sessionsFile } from "../../core/session/store/sqlite.ts";
import { tempFolder } from "./fixtures.ts";

describeStoreConformance("SqliteSessionStore on a file", async () => {
  const folder = tempFolder("store-conformance");
  const file = sessionsFile(folder.path);
  const opened: SqliteSessionStore[] = [];
  const open = () => {
    const store = new SqliteSessionStore(file);
    opened.push(store);
    return store;
  };
  return {
    store: open(),
    reopen: async () => open(),
    close: async () => {
      try {
        for (const store of opened) await store.close();
      } finally {
        folder.remove();
      }
    },
  };
});

describeStoreConformance(
  'SqliteSessionStore in memory (":memory:")',
  async () => {
    const store = new SqliteSessionStore(":memory:");
    return { store, close: () => store.close() };
  },
  { isDurable: false },
);
