// `context-host check`: purpose-made bad plugins each fail the check written for them,
// naming the plugin (and the source key where one is at fault); the first-party plugins
// and a good plugin pass; exit codes 0, 1 and 64.

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { expect } from "chai";
import { silentLogger } from "../../core/base/clock.ts";
import { Scope } from "../../core/base/scope.ts";
import { checkPluginIsolated } from "../../core/conformance/check-isolated.ts";
import { checkPlugin } from "../../core/conformance/check-plugin.ts";
import { builtinNamespaces, startContextSources } from "../../core/host/context-sources.ts";
import { namespaceOf } from "../../core/system-context/index.ts";
import { main } from "../../scripts/cli/main.ts";

const good = (body = "", name = "good") => `import { definePlugin } from "context-host";
import Type from "typebox";
${body}
export default definePlugin({
  name: "${name}",
  setup(api) {
    api.source({
      key: "${name}/weather",
      schema: Type.Object({ city: Type.String({ minLength: 1 }), celsius: Type.Integer({ minimum: -60, maximum: 60 }) }),
      load: () => ({ city: "Oslo", celsius: 4 }),
      baseline: (v) => "Weather in " + v.city + ": " + v.celsius + " °C.",
      update: (_p, v) => "Weather in " + v.city + " is now " + v.celsius + " °C.",
      removed: (p) => "The weather for " + p.city + " no longer applies.",
    });
  },
});
`;

describe("context-host check", function () {
  this.timeout(20_000);
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "check-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  async function cli(args: string[]) {
    const out: string[] = [];
    const err: string[] = [];
    const code = await main(args, { cwd: dir, out: (t) => out.push(t), err: (t) => err.push(t) });
    return { code, out: out.join("\n"), err: err.join("\n") };
  }

  function plugin(name: string, code: string): string {
    const file = path.join(dir, `${name}.ts`);
    writeFileSync(file, code);
    return file;
  }

  it("a good plugin and the first-party plugins pass with exit 0", async () => {
    plugin("good", good());
    const first = await cli(["check", "good.ts"]);
    expect(first.out).to.equal("");
    expect(first.code).to.equal(0);
    const firstParty = await main(["check", path.resolve("plugins")], { cwd: path.resolve("."), out: () => {}, err: () => {} });
    expect(firstParty).to.equal(0);
  });

  const bad: Array<[string, string, string]> = [
    ["plugin-loads", "a key outside the namespace", good().replace('key: "good/weather"', 'key: "other/weather"')],
    ["plugin-loads", "a syntax error", "export default definePlugin({ name: 'broken', setup( });"],
    ["import-side-effects", "a timer started at import time", good("const poll = setInterval(() => {}, 1000); void poll;")],
    [
      "dispose-releases",
      "an interval setup starts and never clears",
      good().replace("setup(api) {", "setup(api) {\n    setInterval(() => {}, 1000);"),
    ],
    [
      "setup-repeats",
      "setup that works only once",
      good("const g = globalThis as Record<string, unknown>;").replace(
        "setup(api) {",
        'setup(api) {\n    if (g.__checkOnce) throw new Error("already set up"); g.__checkOnce = true;',
      ),
    ],
    [
      "update-new-state",
      "an update that does not say the new value",
      good().replace(
        'update: (_p, v) => "Weather in " + v.city + " is now " + v.celsius + " °C."',
        'update: () => "The weather changed."',
      ),
    ],
  ];
  for (const [check, what, code] of bad) {
    it(`${check}: ${what} fails with exit 1, naming the plugin and the check`, async () => {
      plugin("bad", code);
      const { code: exit, out } = await cli(["check", "bad.ts"]);
      expect(exit, out).to.equal(1);
      expect(out).to.match(new RegExp(`^bad\\.ts(:\\d+:\\d+)? \\[[a-z]+[^\\]]*\\] ${check}: `, "m"));
      if (
        !check.startsWith("plugin-") &&
        check !== "import-side-effects" &&
        check !== "dispose-releases" &&
        check !== "setup-repeats"
      ) {
        expect(out).to.contain("[good good/weather]");
      }
    });
  }

  it("the defects of issue 34 fail with exit 1, each naming its key and its rule", async () => {
    const defects = path.resolve("test/conformance/fixtures/defects");
    const { code, out, err } = await cli([
      "check",
      ...["value-mismatch", "codec-lossy", "loader-never-settles"].map((name) => path.join(defects, `${name}.ts`)),
    ]);
    expect(code, out).to.equal(1);
    expect(err).to.contain("3 plugin(s) checked: 3 error(s)");
    expect(out).to.match(
      / \[value-mismatch value-mismatch\/count\] value-schema: the host rejects the loaded value 42: .*must be string/,
    );
    expect(out).to.match(
      / \[codec-lossy codec-lossy\/name\] round-trip: decode\(encode\(v\)\) differs from v at \/: " x" encodes to " {7}x" and decodes to "x"/,
    );
    expect(out).to.match(
      / \[loader-never-settles loader-never-settles\/value\] loader-settles: the loader missed its deadline of 2000 ms/,
    );
    expect(out).to.not.contain("exit code");
  });

  it("a loader that never settles is a loader-settles deadline naming its key, whatever the worker's event loop does afterwards", async () => {
    const never = (top: string, load: string, name: string) =>
      good(top, name).replace('load: () => ({ city: "Oslo", celsius: 4 }),', `load: ${load},`);
    const cases: Array<[string, string, string]> = [
      ["idle", "", "() => new Promise(() => {})"],
      ["busy", "let ticks = 0;", "() => { const t = setInterval(() => { ticks++; }, 5); void t; return new Promise(() => {}); }"],
      ["blocked", "", "() => { setTimeout(() => { for (;;) {} }, 20); return new Promise(() => {}); }"],
    ];
    for (const [name, top, load] of cases) plugin(name, never(top, load, name));
    // Each in a worker of its own, at once: the three deadlines run side by side.
    const checked = await Promise.all(
      cases.map(([name]) => checkPluginIsolated(path.join(dir, `${name}.ts`), { deadlineMs: 300 })),
    );
    cases.forEach(([name], index) => {
      const findings = checked[index] ?? [];
      const errors = findings.filter((f) => f.severity === "error");
      expect(errors[0], `${name}: ${JSON.stringify(findings)}`).to.include({ check: "loader-settles", key: `${name}/weather` });
      expect(errors[0]?.message, name).to.match(/deadline of 300 ms|within 300 ms/);
    });
  });

  it("a read a disposer starts and that ends by itself is not left running (dispose-releases waits for requests in flight)", async () => {
    const data = path.join(dir, "data.bin");
    writeFileSync(data, Buffer.alloc(8 * 1024 * 1024, 1));
    plugin(
      "reader",
      good("", "reader").replace(
        "  setup(api) {",
        `  setup(api) {
    api.onDispose(() => {
      require("node:fs").readFile(${JSON.stringify(data)}, () => {});
    });`,
      ),
    );
    const findings = await checkPlugin(path.join(dir, "reader.ts"));
    expect(findings.map((f) => [f.check, f.message])).to.deep.equal([]);
  });

  it("a plugin named for a namespace the host's built-in sources own fails plugin-loads, as the host refuses it", async () => {
    plugin("instructions", good("", "instructions"));
    const findings = await checkPlugin(path.join(dir, "instructions.ts"));
    expect(findings.map((f) => [f.plugin, f.check, f.severity])).to.deep.equal([["instructions", "plugin-loads", "error"]]);
    expect(findings[0]?.message).to.contain('the namespace "instructions" is reserved');
    const { code, out } = await cli(["check", "instructions.ts"]);
    expect(code, out).to.equal(1);
    expect(out).to.match(/^instructions\.ts \[instructions\] plugin-loads: .*"instructions" is reserved/m);
  });

  it("check reserves exactly the namespaces of the host's built-in sources", async () => {
    const scope = new Scope("built-ins");
    try {
      const sources = await startContextSources({ cwd: dir, plugins: [], watch: false, logger: silentLogger }, scope);
      const namespaces = new Set(sources.registry.state.registrations.map((r) => namespaceOf(r.key)));
      expect([...namespaces].sort()).to.deep.equal([...builtinNamespaces].sort());
    } finally {
      await scope.close();
    }
  });

  it("a warning alone passes; --json gives the findings as data", async () => {
    plugin("warn", good("let loads = 0;").replace("celsius: 4 }", "celsius: loads++ % 50 }"));
    const findings = await checkPlugin(path.join(dir, "warn.ts"));
    expect(findings.map((f) => [f.check, f.severity, f.key])).to.deep.equal([["volatile-value", "warning", "good/weather"]]);
    const { code, out } = await cli(["check", "warn.ts", "--json"]);
    expect(code).to.equal(0);
    expect(JSON.parse(out).findings[0]).to.include({ check: "volatile-value", severity: "warning", plugin: "good" });
  });

  it("a plugin that exits or loops is a plugin-loads finding, and the plugins after it are still checked", async () => {
    plugin("exits", good("process.exit(0);", "exits"));
    plugin("loops", good("for (;;) {}", "loops"));
    plugin("fine", good("", "fine"));
    const { code, out, err } = await cli(["check", "exits.ts", "fine.ts"]);
    expect(code, out).to.equal(1);
    expect(err).to.contain("2 plugin(s) checked: 1 error(s), 0 warning(s)");
    expect(out).to.match(
      /^exits\.ts \[exits\] plugin-loads: the plugin's worker ended with exit code 0 while the module code ran/m,
    );
    expect(out).to.not.contain("fine");
    const looped = await checkPluginIsolated(path.join(dir, "loops.ts"), { checkDeadlineMs: 500 });
    expect(looped.map((f) => [f.plugin, f.check, f.severity])).to.deep.equal([["loops", "plugin-loads", "error"]]);
    expect(looped[0]?.message).to.contain("did not finish within 500 ms");
  });

  it("a plugin's settings come from the settings file (--settings, else context-host.json), as render takes them", async () => {
    plugin(
      "configured",
      good("", "configured")
        .replace("setup(api) {", "config: Type.Object({ city: Type.String() }),\n  setup(api, config) {")
        .replace('({ city: "Oslo", celsius: 4 })', "({ city: config.city, celsius: 4 })"),
    );
    const without = await cli(["check", "configured.ts"]);
    expect(without.code, without.out).to.equal(1);
    expect(without.out).to.contain("plugin-loads").and.contain("config rejected");
    writeFileSync(path.join(dir, "mine.json"), JSON.stringify({ pluginSettings: { configured: { city: "Bergen" } } }));
    const given = await cli(["check", "configured.ts", "--settings", "mine.json"]);
    expect({ code: given.code, out: given.out }).to.deep.equal({ code: 0, out: "" });
    writeFileSync(path.join(dir, "context-host.json"), JSON.stringify({ pluginSettings: { configured: { city: "Tromsø" } } }));
    expect((await cli(["check", "configured.ts"])).code).to.equal(0);
    expect((await cli(["check", "configured.ts", "--settings", "missing.json"])).code).to.equal(64);
  });

  it("with no plugin named, check checks ./plugins as render loads it; without that folder there are no plugins to check", async () => {
    const none = await cli(["check"]);
    expect(none.code).to.equal(0);
    expect(none.err).to.contain(`context-host: no plugins: there is no plugins folder here (${path.join(dir, "plugins")})`);
    mkdirSync(path.join(dir, "plugins"));
    writeFileSync(
      path.join(dir, "plugins", "bad.ts"),
      good().replace(
        'update: (_p, v) => "Weather in " + v.city + " is now " + v.celsius + " °C."',
        'update: () => "The weather changed."',
      ),
    );
    const found = await cli(["check"]);
    expect(found.code, found.out).to.equal(1);
    expect(found.out).to.match(/^plugins\/bad\.ts \[good good\/weather\] update-new-state: /m);
  });

  it("a throwing loader's finding gives its line and column and the code frame, as render does", async () => {
    plugin(
      "throws",
      good().replace('load: () => ({ city: "Oslo", celsius: 4 }),', 'load: () => { throw new Error("no sky today"); },'),
    );
    const { code, out } = await cli(["check", "throws.ts"]);
    expect(code).to.equal(1);
    expect(out.split("\n").slice(0, 3)).to.deep.equal([
      "throws.ts:10:27 [good good/weather] loader-settles: the loader threw: no sky today — settle within 2000 ms; return SystemContext.unavailable when the value cannot be observed now instead of throwing or hanging",
      '10 |       load: () => { throw new Error("no sky today"); },',
      "   |                           ^",
    ]);
  });

  it("bad usage exits 64: a missing file, an unknown option", async () => {
    const missing = await cli(["check", "nope.ts"]);
    expect(missing.code).to.equal(64);
    expect(missing.err).to.contain(`nope.ts: no such folder or file (${path.join(dir, "nope.ts")})`);
    expect((await cli(["check", "--frobnicate"])).code).to.equal(64);
  });
});
