// What a new user of createHost meets first, made visible: a plugin folder that does not
// exist, plugin problems nobody asked for, a prompt that is not a string, no options,
// and a store that cannot be opened (issue 35).

import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { expect } from "chai";
import { createHost, type Diagnostic, PromptInvalid, SettingInvalid, scriptedProvider } from "../../core/index.ts";
import { SqliteSessionStore, StoreFailed, StorePathUnusable } from "../../core/store.ts";
import { hostsPerTest, openHost } from "./fixtures.ts";

/** The rejection of `promise`; fails the test when it resolves. */
async function rejection(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  throw new Error("expected a rejection");
}

/** Runs `work` with process.stderr.write recorded (and not printed); returns what was written. */
async function stderrOf(work: () => Promise<void>): Promise<string> {
  const write = process.stderr.write;
  let written = "";
  process.stderr.write = ((chunk: string | Uint8Array) => {
    written += typeof chunk === "string" ? chunk : Buffer.from(chunk).toString("utf8");
    return true;
  }) as typeof process.stderr.write;
  try {
    await work();
  } finally {
    process.stderr.write = write;
  }
  return written;
}

/** A plugin whose loader throws at every observation. */
const throwingPlugin = `import { definePlugin } from "context-host/plugin";
import Type from "typebox";
export default definePlugin({
  name: "weather",
  setup(api) {
    api.source({
      key: "weather/today",
      schema: Type.String(),
      load: () => lookUp(),
      baseline: (sky) => "The sky is " + sky,
      update: (_p, sky) => "The sky is now " + sky,
    });
  },
});
`;

describe("host: the first hour's failures are visible", () => {
  const { folder, extraFolder } = hostsPerTest();
  const providers = { scripted: scriptedProvider() };

  it("an explicitly given plugin folder that does not exist is an error naming it", async () => {
    const missing = path.join(folder.path, "no-such-plugins");
    const error = await rejection(openHost(folder.path, { providers, plugins: [folder.path, missing] }));
    expect(error).to.be.instanceOf(SettingInvalid);
    expect(error.message).to.equal(`setting plugins[1]: no such folder or file: ${missing}`);
  });

  it("a host with no plugin folders (plugins: []) and watching on starts", async () => {
    // chokidar never says "ready" with nothing to watch: the host waited for it forever.
    const host = await openHost(folder.path, { providers, plugins: [], watch: true });
    expect(host.plugins()).to.deep.equal([]);
    await host.close();
  });

  it("a plugin file given explicitly loads as that plugin (a folder or file must exist, or it is not taken for a package name)", async () => {
    const file = path.join(folder.path, "weather.ts");
    writeFileSync(file, throwingPlugin);
    const host = await openHost(folder.path, { providers, plugins: [file], onDiagnostic: false });
    try {
      expect(host.plugins().map((plugin) => plugin.file)).to.deep.equal([file]);
    } finally {
      await host.close();
    }
  });

  it("by default each new plugin problem is printed to stderr once, however many boundaries it recurs at", async () => {
    const plugins = extraFolder("plugins");
    writeFileSync(path.join(plugins, "weather.ts"), throwingPlugin);
    const printed = await stderrOf(async () => {
      const host = await openHost(folder.path, { providers: { scripted: scriptedProvider() }, plugins: [plugins] });
      try {
        const id = await host.createSession({ location: folder.path, provider: "scripted", model: "m" });
        for (const text of ["one", "two"]) {
          await host.prompt(id, text);
          await host.step(id);
        }
      } finally {
        await host.close();
      }
    });
    const lines = printed.split("\n").filter((line) => line.includes("[weather"));
    expect(lines).to.have.length(1);
    expect(lines[0]).to.contain("weather.ts").and.contain("load weather/today]").and.contain("lookUp is not defined");
  });

  it("onDiagnostic receives the problems instead, those of the start included; false prints nothing", async () => {
    const plugins = extraFolder("plugins");
    writeFileSync(path.join(plugins, "broken.ts"), "export default definePlugin({ name: 'broken', setup( });\n");
    const heard: Diagnostic[] = [];
    const printed = await stderrOf(async () => {
      const hearing = await openHost(folder.path, { providers, plugins: [plugins], onDiagnostic: (d) => heard.push(d) });
      await hearing.close();
      const silent = await openHost(folder.path, { providers, plugins: [plugins], onDiagnostic: false });
      expect(silent.currentDiagnostics().map((d) => d.phase)).to.deep.equal(["bundle"]);
      await silent.close();
    });
    expect(heard.map((d) => `${d.plugin} ${d.phase}`)).to.deep.equal(["broken bundle"]);
    expect(printed).to.equal("");
  });

  for (const [given, got] of [
    [42, "number 42"],
    [{ text: "hi" }, "an object"],
    [undefined, "undefined"],
  ] as const) {
    it(`a prompt that is not a string (${got}) says a prompt must be a string and what it got`, async () => {
      const host = await openHost(folder.path, { providers });
      try {
        const id = await host.createSession({ location: folder.path, provider: "scripted", model: "m" });
        const error = await rejection(host.prompt(id, given as unknown as string));
        expect(error).to.be.instanceOf(PromptInvalid);
        expect(error.message).to.equal(`prompt for session ${id}: the prompt must be a string; got ${got}`);
      } finally {
        await host.close();
      }
    });
  }

  it("createHost() without options says it needs { providers }", async () => {
    const error = await rejection((createHost as (options?: unknown) => Promise<unknown>)());
    expect(error).to.be.instanceOf(SettingInvalid);
    expect(error.message)
      .to.contain("createHost needs an options object with at least { providers }")
      .and.contain("got undefined");
  });

  it("createHost({}) names the missing providers", async () => {
    const error = await rejection((createHost as (options?: unknown) => Promise<unknown>)({ dataDir: folder.path }));
    expect(error.message).to.match(/^setting providers: createHost needs \{ providers \}/);
  });

  it("a data folder whose sessions.db is not a database rejects with StoreFailed naming the file and what to do", async () => {
    const file = path.join(folder.path, "sessions.db");
    writeFileSync(file, "not a database, but long enough to have a header page of its own ".repeat(100));
    const error = await rejection(openHost(folder.path, { providers }));
    expect(error).to.be.instanceOf(StoreFailed);
    expect(error.message).to.equal(
      `${file}: open the session store failed: file is not a database — it is not a context-host session store: move it away, or choose another data folder`,
    );
  });

  it("a file where the data folder should be rejects with StorePathUnusable naming the data folder, the file and what to do", async () => {
    const blocker = path.join(folder.path, "data");
    writeFileSync(blocker, "a file where the data folder should be");
    for (const dataDir of [blocker, path.join(blocker, "inner")]) {
      const error = await rejection(openHost(dataDir, { providers }));
      expect(error).to.be.instanceOf(StorePathUnusable);
      expect(error.message).to.equal(
        `data folder ${dataDir}: ${blocker} is a file, not a folder — move it away, or choose another data folder`,
      );
      expect(error.message).not.to.match(/EEXIST|ENOTDIR|mkdir/);
    }
  });

  it("a folder named sessions.db in the data folder rejects with StorePathUnusable naming it", async () => {
    mkdirSync(path.join(folder.path, "sessions.db"));
    const error = await rejection(openHost(folder.path, { providers }));
    expect(error).to.be.instanceOf(StorePathUnusable);
    expect(error.message).to.equal(
      `data folder ${folder.path}: ${path.join(folder.path, "sessions.db")} is a folder, where the session store's file should be — move it away, or choose another data folder`,
    );
  });

  it("new SqliteSessionStore(file) speaks of its file, never of a data folder option", async () => {
    const asFolder = path.join(folder.path, "store.db");
    mkdirSync(asFolder);
    const cases: Array<[string, string]> = [
      [asFolder, `session store file ${asFolder}: ${asFolder} is a folder, where the session store's file should be`],
      [path.join(folder.path, "plain", "x.db"), `${path.join(folder.path, "plain")} is a file, not a folder`],
    ];
    writeFileSync(path.join(folder.path, "plain"), "a file");
    const notADatabase = path.join(folder.path, "text.db");
    writeFileSync(notADatabase, "not a database, but long enough to have a header page of its own ".repeat(100));
    for (const [file, message] of cases) {
      const error = catching(() => new SqliteSessionStore(file));
      expect(error).to.be.instanceOf(StorePathUnusable);
      expect(error.message).to.contain(message).and.contain("give the store another file").and.not.contain("dataDir");
    }
    const error = catching(() => new SqliteSessionStore(notADatabase));
    expect(error).to.be.instanceOf(StoreFailed);
    expect(error.message).to.contain("give the store another file").and.not.contain("data folder");
  });
});

/** What `work` throws (a failure when it throws nothing). */
function catching(work: () => unknown): Error {
  try {
    work();
  } catch (error) {
    return error as Error;
  }
  return expect.fail("expected a throw") as never;
}
