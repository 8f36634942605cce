// The Host runs on the context engine (decision 104): one store keeps both kinds of
// session, decided and committed by the same code; an engine call on a Host session's id
// is refused, naming why.

import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { expect } from "chai";
import { createContextEngine } from "../../core/host/engine.ts";
import { createHost } from "../../core/host/host.ts";
import { scriptedProvider } from "../../core/providers/scripted.ts";
import { SessionBusy } from "../../core/session/errors.ts";
import { SqliteSessionStore, sessionsFile } from "../../core/session/store/sqlite.ts";
import { listSessions } from "../../core/session/store/store.ts";
import { testSource } from "../session/fixtures.ts";

describe("the Host and the engine on one store", () => {
  let dir = "";
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "engine-host-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("keep their sessions in one file with the same epochs and snapshots; the engine refuses a Host session's id", async () => {
    const branch = testSource("core/branch", "main");
    const common = {
      builtins: false,
      plugins: [],
      watch: false,
      onDiagnostic: false as const,
      core: [branch.core],
      dataDir: dir,
    };
    const host = await createHost({ ...common, providers: { scripted: scriptedProvider() } });
    const engine = await createContextEngine(common);
    try {
      const hostSession = await host.createSession({ location: dir, provider: "scripted", model: "m" });
      await host.prompt(hostSession, "hi");
      await host.step(hostSession);
      const answer = await engine.boundary("loop-1", {
        location: dir,
        provider: "anthropic",
        model: "claude-opus-4-8",
        messages: [{ role: "user", content: "hi" }],
      });
      // The same sources, decided the same way: the same Baseline for both kinds of session.
      expect(answer.baseline).to.equal((await host.epoch(hostSession))?.baseline);
      const failure = await engine
        .boundary(hostSession, { location: dir, provider: "anthropic", model: "m", messages: [] })
        .catch((error: unknown) => error);
      expect(failure).to.be.instanceOf(SessionBusy);
      expect((failure as Error).message).to.include("Host session");
    } finally {
      await engine.close();
      await host.close();
    }
    const store = new SqliteSessionStore(sessionsFile(dir));
    try {
      const sessions = await listSessions(store);
      expect(sessions.map((s) => [s.seen === undefined ? "host" : "engine", s.isAwaitingReply])).to.deep.equal([
        ["host", false],
        ["engine", false],
      ]);
    } finally {
      await store.close();
    }
  });
});
