// The plugin host loading plugins from real folders: discovery, the author's API
// (config checked before setup, services from awilix), and plugins outside the
// project sharing the host's single copy of `context-host` and TypeBox.

import { execFile } from "node:child_process";
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { promisify } from "node:util";
import { expect } from "chai";
import Type from "typebox";
import { Compile } from "typebox/compile";
import { definePlugin } from "../../core/index.ts";
import * as pluginApi from "../../core/plugins/api.ts";
import * as SystemContext from "../../core/system-context.ts";
import { baselineOf, logLines, textPlugin, usePluginHarness, write } from "./harness.ts";

const run = promisify(execFile);
const require = createRequire(import.meta.url);
const typedWeather = path.join(import.meta.dirname, "fixtures", "typed-weather.ts");

describe("Plugin host: discovery", () => {
  const harness = usePluginHarness();

  it("discovers file plugins and folder plugins with an index.ts, in sorted order of name", async () => {
    const folder = harness.tempFolder();
    write(path.join(folder, "zebra.ts"), textPlugin({ name: "zebra", value: "z" }));
    write(path.join(folder, "apple", "index.ts"), textPlugin({ name: "apple", value: "a" }));
    write(path.join(folder, "mango.js"), textPlugin({ name: "mango", value: "m" }));
    const running = await harness.start({ folders: [folder], watch: false });
    expect(running.host.plugins().map((p) => [p.name, path.relative(folder, p.file), p.generation])).to.deep.equal([
      ["apple", path.join("apple", "index.ts"), 1],
      ["mango", "mango.js", 1],
      ["zebra", "zebra.ts", 1],
    ]);
    expect((await baselineOf(running)).baseline).to.equal("apple: a\n\nmango: m\n\nzebra: z");
  });

  it("ignores files that are not plugins: hidden, underscored, tests, declarations, other types, folders without an index", async () => {
    const folder = harness.tempFolder();
    write(path.join(folder, "real.ts"), textPlugin({ name: "real", value: "yes" }));
    for (const name of [".hidden.ts", "_helper.ts", "real.test.ts", "real.spec.ts", "types.d.ts", "notes.md", "data.json"]) {
      write(path.join(folder, name), textPlugin({ name: "wrong", value: name }));
    }
    write(path.join(folder, "lib", "util.ts"), textPlugin({ name: "wrong", value: "lib" }));
    write(path.join(folder, "node_modules", "index.ts"), textPlugin({ name: "wrong", value: "node_modules" }));
    const running = await harness.start({ folders: [folder], watch: false });
    expect(running.host.plugins().map((p) => p.name)).to.deep.equal(["real"]);
    expect(running.host.diagnostics).to.deep.equal([]);
  });

  it("runs setup of the plugins it discovers at start in sorted order of name", async () => {
    const folder = harness.tempFolder();
    const log = path.join(folder, "setups.log");
    for (const name of ["delta", "alpha", "echo", "charlie", "bravo"]) {
      write(path.join(folder, `${name}.ts`), textPlugin({ name, value: name, log }));
    }
    // In-process setups run one after another; isolated ones run concurrently, each in its own
    // worker (test/plugins/worker-lifecycle.test.ts), so the order of their side effects is free.
    await harness.start({ folders: [folder], watch: false, isolation: "none" });
    expect(logLines(log)).to.deep.equal(["setup alpha", "setup bravo", "setup charlie", "setup delta", "setup echo"]);
  });

  it("loads plugins from every configured folder; a missing folder has none", async () => {
    const first = harness.tempFolder();
    const second = harness.tempFolder();
    write(path.join(first, "one.ts"), textPlugin({ name: "one", value: "1" }));
    write(path.join(second, "two.ts"), textPlugin({ name: "two", value: "2" }));
    const running = await harness.start({ folders: [first, path.join(first, "missing"), second], watch: false });
    expect(running.host.plugins().map((p) => p.name)).to.deep.equal(["one", "two"]);
  });
});

describe("Plugin host: the plugin author's API", () => {
  const harness = usePluginHarness();

  it("a typed plugin gets its config and source values as the schemas' static types, end to end", async () => {
    const folder = harness.tempFolder();
    fs.copyFileSync(typedWeather, path.join(folder, "weather.ts"));
    const running = await harness.start({ folders: [folder], watch: false, settings: { weather: { city: "Oslo" } } });
    expect(running.host.diagnostics).to.deep.equal([]);
    expect((await baselineOf(running)).baseline).to.equal("Weather in Oslo: 21.5 °C for 3 days");
  });

  it("config is checked before setup, with the schema's defaults applied", async () => {
    const folder = harness.tempFolder();
    write(
      path.join(folder, "greeter.ts"),
      `import { definePlugin } from "context-host";
import Type from "typebox";

export default definePlugin({
  name: "greeter",
  config: Type.Object({ greeting: Type.String({ default: "hello" }), times: Type.Integer({ default: 2 }) }),
  setup(api, config) {
    api.source({
      key: "greeter/greeting",
      schema: Type.String(),
      load: () => JSON.stringify(config),
      baseline: (value) => value,
      update: (_previous, value) => value,
    });
  },
});
`,
    );
    const running = await harness.start({ folders: [folder], watch: false, settings: { greeter: { times: 3 } } });
    expect((await baselineOf(running)).baseline).to.equal('{"times":3,"greeting":"hello"}');
  });

  it("a plugin without settings gets its config from the schema's defaults alone", async () => {
    const folder = harness.tempFolder();
    fs.copyFileSync(typedWeather, path.join(folder, "weather.ts"));
    write(
      path.join(folder, "units.ts"),
      `import { definePlugin } from "context-host";
import Type from "typebox";

export default definePlugin({
  name: "units",
  config: Type.Object({ system: Type.String({ default: "metric" }) }),
  setup(api, config) {
    api.source({
      key: "units/system",
      schema: Type.String(),
      load: () => config.system,
      baseline: (value) => "Units: " + value,
      update: (_previous, value) => "Units are now " + value,
    });
  },
});
`,
    );
    const running = await harness.start({ folders: [folder], watch: false, settings: { weather: { city: "Lima" } } });
    expect((await baselineOf(running)).baseline).to.contain("Units: metric");
  });

  it("setup resolves clock, logger, location, config and pluginName from its own awilix scope", async () => {
    const folder = harness.tempFolder();
    write(
      path.join(folder, "services.ts"),
      `import { definePlugin } from "context-host";
import Type from "typebox";

export default definePlugin({
  name: "services",
  config: Type.Object({ label: Type.String() }),
  setup(api) {
    const { clock, logger, location, config, pluginName } = api.services;
    logger.info(pluginName + " set up at " + clock.now());
    api.source({
      key: "services/seen",
      schema: Type.String(),
      load: () => [clock.now(), location, config.label, pluginName, api.name].join(" | "),
      baseline: (value) => value,
      update: (_previous, value) => value,
    });
  },
});
`,
    );
    const running = await harness.start({
      folders: [folder],
      watch: false,
      clock: { now: () => 1_700_000_000_000 },
      location: "/work/some-project",
      settings: { services: { label: "from settings" } },
    });
    expect((await baselineOf(running)).baseline).to.equal(
      "1700000000000 | /work/some-project | from settings | services | services",
    );
    expect(running.logged).to.deep.equal(["info services set up at 1700000000000"]);
  });

  it("a loader receives the boundary's location as env.location", async () => {
    const folder = harness.tempFolder();
    write(
      path.join(folder, "where.ts"),
      `import { definePlugin } from "context-host";
import Type from "typebox";

export default definePlugin({
  name: "where",
  setup(api) {
    api.source({
      key: "where/location",
      schema: Type.String(),
      load: (env) => env.location,
      baseline: (value) => "Working in " + value,
      update: (_previous, value) => "Now working in " + value,
    });
  },
});
`,
    );
    const running = await harness.start({ folders: [folder], watch: false });
    const generation = await SystemContext.initialize(await running.registry.compose({ location: "/work/session-a" }));
    expect(generation.baseline).to.equal("Working in /work/session-a");
  });
});

describe("Plugin host: plugins outside the project", () => {
  const harness = usePluginHarness();

  it("a plugin reaches only the plugin API through context-host: not the host, the store or the runtime", async () => {
    const folder = harness.tempFolder("api-only-");
    write(
      path.join(folder, "probe.ts"),
      `import * as byName from "context-host";
import * as byPlugin from "context-host/plugin";
import Type from "typebox";

const seen = { names: Object.keys(byName).sort(), same: byName.definePlugin === byPlugin.definePlugin && byName.SystemContext === byPlugin.SystemContext };

export default byName.definePlugin({
  name: "probe",
  setup(api) {
    api.source({
      key: "probe/seen",
      schema: Type.String(),
      load: () => JSON.stringify(seen),
      baseline: (value) => value,
      update: (_previous, value) => value,
    });
  },
});
`,
    );
    // What the plugin saw travels back as its source's value: it ran in its own worker.
    const running = await harness.start({ folders: [folder], watch: false });
    const seen = JSON.parse((await baselineOf(running)).baseline) as { names: string[]; same: boolean };
    expect(running.host.diagnostics).to.deep.equal([]);
    expect(seen.same).to.equal(true);
    expect(seen.names).to.deep.equal(Object.keys(pluginApi).sort());
    for (const internal of ["createHost", "SqliteSessionStore", "PluginSet", "Registry", "anthropicProvider"]) {
      expect(seen.names).to.not.include(internal);
    }
  });

  it("a plugin folder anywhere on disk imports context-host and typebox and gets the host's own copies", async () => {
    const folder = harness.tempFolder("somewhere-else-");
    const token = `__contextHostTest_${process.pid}_${Date.now()}`;
    write(
      path.join(folder, "shared.ts"),
      `import { definePlugin, SystemContext } from "context-host";
import Type from "typebox";
import { Compile } from "typebox/compile";

(globalThis as Record<string, unknown>)[${JSON.stringify(token)}] = { definePlugin, SystemContext, Type, Compile };

export default definePlugin({
  name: "shared",
  setup(api) {
    api.source({
      key: "shared/copy",
      schema: Type.String(),
      load: () => "one copy",
      baseline: (value) => value,
      update: (_previous, value) => value,
    });
  },
});
`,
    );
    // The host's own copies are shared with a plugin only in-process (isolation "none"): an
    // isolated plugin runs in a worker with the worker's one copy of each.
    const running = await harness.start({ folders: [folder], watch: false, isolation: "none" });
    const seen = (globalThis as Record<string, unknown>)[token] as Record<string, unknown>;
    delete (globalThis as Record<string, unknown>)[token];
    expect(running.host.diagnostics).to.deep.equal([]);
    expect(seen.definePlugin).to.equal(definePlugin);
    // The plugin API's own namespace: the values a loader returns, the same symbols the core knows.
    expect(seen.SystemContext).to.equal(pluginApi.SystemContext);
    expect((seen.SystemContext as typeof pluginApi.SystemContext).unavailable).to.equal(SystemContext.unavailable);
    expect((seen.SystemContext as typeof pluginApi.SystemContext).absent).to.equal(SystemContext.absent);
    expect(seen.Type).to.equal(Type);
    expect(seen.Compile).to.equal(Compile);
  });

  it("a host run directly with tsx (no mocha) also hands plugins its own copies of context-host and typebox", async () => {
    const folder = harness.tempFolder("somewhere-else-");
    const core = path.resolve(import.meta.dirname, "..", "..", "core");
    write(
      path.join(folder, "plugins", "shared.ts"),
      `import { definePlugin } from "context-host";
import Type from "typebox";
import { Compile } from "typebox/compile";

(globalThis as Record<string, unknown>).seenByPlugin = { definePlugin, Type, Compile };

export default definePlugin({ name: "shared", setup() {} });
`,
    );
    const script = write(
      path.join(folder, "host.mts"),
      `import { asValue, createContainer } from ${JSON.stringify(require.resolve("awilix"))};
import Type from ${JSON.stringify(require.resolve("typebox"))};
import { Compile } from ${JSON.stringify(require.resolve("typebox/compile"))};
import { definePlugin } from ${JSON.stringify(path.join(core, "index.ts"))};
import { PluginSet } from ${JSON.stringify(path.join(core, "plugins", "plugin-set.ts"))};
import { Registry } from ${JSON.stringify(path.join(core, "registry", "registry.ts"))};

const container = createContainer();
const logger = { info() {}, warn() {}, error() {} };
container.register({ clock: asValue({ now: () => 0 }), logger: asValue(logger), location: asValue(process.cwd()) });
const folders = [${JSON.stringify(path.join(folder, "plugins"))}];
// In-process (isolation "none"): the plugin's globals are the host's.
const host = await PluginSet.start({ folders, registry: new Registry(), container, watch: false, isolation: "none" });
const seen = (globalThis as Record<string, any>).seenByPlugin;
console.log(JSON.stringify({
  definePlugin: seen.definePlugin === definePlugin,
  Type: seen.Type === Type,
  Compile: seen.Compile === Compile,
  diagnostics: host.diagnostics,
}));
await host.close();
`,
    );
    const { stdout } = await run(process.execPath, ["--import", "tsx", script], { cwd: path.resolve(core, "..") });
    expect(JSON.parse(stdout)).to.deep.equal({ definePlugin: true, Type: true, Compile: true, diagnostics: [] });
  });

  it("a plugin loader returning SystemContext.unavailable is understood by the host: the source is left out", async () => {
    const folder = harness.tempFolder("somewhere-else-");
    write(
      path.join(folder, "later.ts"),
      `import { definePlugin, SystemContext } from "context-host";
import Type from "typebox";

export default definePlugin({
  name: "later",
  setup(api) {
    api.source({
      key: "later/value",
      schema: Type.String(),
      load: () => SystemContext.unavailable,
      baseline: (value) => value,
      update: (_previous, value) => value,
    });
  },
});
`,
    );
    write(path.join(folder, "now.ts"), textPlugin({ name: "now", value: "here" }));
    const running = await harness.start({ folders: [folder], watch: false });
    const generation = await baselineOf(running);
    expect(generation.baseline).to.equal("now: here");
    expect(Object.keys(generation.snapshot)).to.deep.equal(["now/status"]);
    expect(running.host.diagnostics).to.deep.equal([]);
  });

  it("a plugin's local imports are bundled with it, from its own folder", async () => {
    const folder = harness.tempFolder("somewhere-else-");
    write(
      path.join(folder, "helpers", "format.ts"),
      `export const shout = (text: string): string => text.toUpperCase() + "!";\n`,
    );
    write(
      path.join(folder, "loud", "index.ts"),
      `import { definePlugin } from "context-host";
import Type from "typebox";
import { shout } from "../helpers/format.ts";

export default definePlugin({
  name: "loud",
  setup(api) {
    api.source({
      key: "loud/word",
      schema: Type.String(),
      load: () => "hello",
      baseline: (value) => shout(value),
      update: (_previous, value) => shout(value),
    });
  },
});
`,
    );
    const running = await harness.start({ folders: [folder], watch: false });
    expect((await baselineOf(running)).baseline).to.equal("HELLO!");
  });
});
