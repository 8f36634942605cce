// `renderBaseline`: the Baseline a host with the same options would start a session with,
// from the public entry, without a store: the same text as a host's first epoch, plugins
// and diagnostics reported, settings checked as `createHost` checks them, nothing left running.

import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { expect } from "chai";
import Type from "typebox";
import { createHost, renderBaseline, SettingInvalid, scriptedProvider } from "../../core/index.ts";
import type { CoreSource } from "../../core/sources/core-source.ts";
import * as SystemContext from "../../core/system-context.ts";
import { tempFolder } from "../session/fixtures.ts";

const clock = { now: () => Date.parse("2026-03-04T05:06:07Z") };

function plugin(name: string, value: string) {
  return `import { definePlugin } from "context-host";
import Type from "typebox";
export default definePlugin({ name: "${name}", setup(api) {
  api.source({ key: "${name}/value", schema: Type.String(), load: () => "${value}", baseline: (v) => "${name} says " + v, update: (_p, v) => "now " + v });
} });`;
}

describe("renderBaseline", function () {
  this.timeout(30_000);
  let folder: ReturnType<typeof tempFolder>;
  let plugins: string;

  beforeEach(() => {
    folder = tempFolder("render-baseline");
    plugins = path.join(folder.path, "plugins");
    mkdirSync(plugins);
    writeFileSync(path.join(plugins, "alpha.ts"), plugin("alpha", "a-value"));
  });
  afterEach(() => folder.remove());

  it("is the Baseline a host with the same options starts its first epoch with, with the plugins that loaded", async () => {
    const options = { plugins: [plugins], timeZone: "UTC", clock, isolation: "none" as const, logger: undefined };
    const rendered = await renderBaseline({ ...options, location: folder.path });
    const host = await createHost({
      ...options,
      dataDir: path.join(folder.path, "data"),
      providers: { scripted: scriptedProvider([{ text: "ok" }]) },
      watch: false,
      onDiagnostic: false,
    });
    try {
      const id = await host.createSession({ location: folder.path, provider: "scripted", model: "m" });
      await host.prompt(id, "hello");
      await host.step(id);
      const epoch = await host.epoch(id);
      expect(rendered.baseline).to.equal(epoch?.baseline);
      expect(rendered.snapshot).to.deep.equal(epoch?.snapshot);
    } finally {
      await host.close();
    }
    expect(rendered.baseline).to.contain("Today's date is 2026-03-04 (UTC).").and.contain("alpha says a-value");
    expect(rendered.plugins.map((info) => [info.name, info.keys])).to.deep.equal([["alpha", ["alpha/value"]]]);
    expect([rendered.failedPlugins, rendered.diagnostics]).to.deep.equal([[], []]);
  });

  it("a plugin that fails is listed with its diagnostic; the rest still render", async () => {
    const broken = path.join(plugins, "broken.ts");
    writeFileSync(broken, `export default 42;`);
    const rendered = await renderBaseline({ plugins: [plugins], location: folder.path, builtins: false, isolation: "none" });
    expect(rendered.baseline).to.equal("alpha says a-value");
    expect(rendered.failedPlugins).to.deep.equal([broken]);
    expect(rendered.diagnostics.map((diagnostic) => diagnostic.file)).to.deep.equal([broken]);
  });

  it("core sources come first, and one that blocks initialization rejects with InitializationBlocked naming it", async () => {
    // A core source that is unavailable blocks initialization.
    const core = (key: string, loaded: SystemContext.Loaded<string>): CoreSource => ({
      key,
      load: () =>
        SystemContext.make({
          key,
          schema: Type.String(),
          load: () => loaded,
          baseline: (value: string) => `${key}: ${value}`,
          update: (_previous: string, value: string) => value,
        }),
    });
    const first = await renderBaseline({
      plugins: [plugins],
      builtins: false,
      core: [core("zz/core", "first")],
      location: folder.path,
    });
    expect(first.baseline).to.equal("zz/core: first\n\nalpha says a-value");
    const error = await renderBaseline({
      plugins: [],
      builtins: false,
      core: [core("gate/open", SystemContext.unavailable)],
      location: folder.path,
    }).catch((caught: unknown) => caught);
    expect(error).to.be.instanceOf(SystemContext.InitializationBlocked);
    expect((error as SystemContext.InitializationBlocked).keys).to.deep.equal(["gate/open"]);
  });

  it("checks settings and plugin folders as createHost does, before starting anything", async () => {
    const badZone = await renderBaseline({ timeZone: "Mars/Olympus", plugins: [] }).catch((caught: unknown) => caught);
    expect(badZone).to.be.instanceOf(SettingInvalid);
    const missing = path.join(folder.path, "nowhere");
    const noFolder = await renderBaseline({ plugins: [missing] }).catch((caught: unknown) => caught);
    expect(noFolder).to.be.instanceOf(SettingInvalid);
    expect((noFolder as Error).message)
      .to.contain("plugins[0]")
      .and.contain(missing);
  });
});
