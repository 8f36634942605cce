// The requests a stored epoch sent (`storedRequests`, context-host/store), rebuilt from the
// durable history: byte for byte the requests the host sent, so `inspect --model` replays
// what was sent, the one a failed provider call was sent included (its history ends with no reply).

import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { expect } from "chai";
import Type from "typebox";
import { createHost, type Provider, type ProviderRequest, scriptedProvider } from "../../core/index.ts";
import { SqliteSessionStore, sessionsFile, storedRequests } from "../../core/store.ts";
import * as SystemContext from "../../core/system-context.ts";

describe("storedRequests: the requests a stored epoch sent", () => {
  let folder: string;
  beforeEach(() => {
    folder = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "context-host-stored-requests-")));
  });
  afterEach(() => fs.rmSync(folder, { recursive: true, force: true }));

  it("are the requests the host sent, a Mid-Conversation System Message and a failed call's request included", async () => {
    let branch = "main";
    const gitBranch = SystemContext.make({
      key: "git/branch",
      schema: Type.String(),
      load: () => branch,
      baseline: (b: string) => `Git branch: ${b}`,
      update: (_previous: string, b: string) => `The git branch is now ${b}.`,
    });
    const dataDir = path.join(folder, "data");
    const scripted = scriptedProvider();
    let calls = 0;
    // The third call fails: its prompt stays admitted, and no reply is stored.
    const provider: Provider = {
      send: (request, options) => (++calls === 3 ? Promise.reject(new Error("provider down")) : scripted.send(request, options)),
    };
    const host = await createHost({
      dataDir,
      providers: { scripted: provider },
      systemPrompt: "You are a test agent.",
      core: [{ key: "git/branch", load: () => gitBranch }],
      builtins: false,
      plugins: [],
      watch: false,
    });
    const sent: ProviderRequest[] = [];
    let id: string;
    try {
      id = await host.createSession({ location: folder, provider: "scripted", model: "echo" });
      for (const text of ["one", "two", "three"]) {
        if (text === "two") branch = "feature";
        await host.prompt(id, text);
        const step = host.step(id, { onRequest: (request) => void sent.push(structuredClone(request)) });
        const failure = await step.then(
          () => undefined,
          (error: Error) => error.message,
        );
        expect(failure).to.equal(text === "three" ? "provider down" : undefined);
      }
    } finally {
      await host.close();
    }
    const store = new SqliteSessionStore(sessionsFile(dataDir));
    try {
      const epoch = await store.activeEpoch(id);
      if (epoch === undefined) throw new Error("no epoch stored");
      const requests = storedRequests(await store.session(id), await store.messages(id), epoch);
      expect(sent).to.have.length(3);
      expect(requests).to.deep.equal(sent);
      expect(sent[1]?.messages.map((m) => m.role)).to.deep.equal(["user", "assistant", "user", "system-update"]);
      expect(sent[2]?.messages.at(-1)).to.deep.equal({ role: "user", text: "three" });
    } finally {
      await store.close();
    }
  });
});
