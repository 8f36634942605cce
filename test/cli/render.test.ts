// `context-host render`: plugins load, the Baseline prints (core first, then plugin
// sources in key order), and the exit code says what happened.

import { execFile } from "node:child_process";
import { mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { expect } from "chai";
import Type from "typebox";
import * as SystemContext from "../../core/system-context.ts";
import { main } from "../../scripts/cli/main.ts";
import { render } from "../../scripts/cli/render.ts";
import { programArgs } from "../support/compiled.ts";

// The program from its source, compiled as the tests' children are (test/support/compiled.ts;
// the packaged program is tested in test/package).
const root = path.resolve(import.meta.dirname, "../..");
const run = promisify(execFile);

function plugin(name: string, keys: string[], extra = "") {
  const sources = keys
    .map(
      (key) => `api.source({ key: "${name}/${key}", schema: Type.String(), load: () => "${key}-value",
        baseline: (v) => "${name}/${key} is " + v, update: (_p, v) => "now " + v });`,
    )
    .join("\n");
  return `import { definePlugin } from "context-host";
import Type from "typebox";
${extra}
export default definePlugin({ name: "${name}", setup(api) { ${sources} } });`;
}

/** Runs the command line in this process, as the program does. */
async function cli(args: string[], cwd: string) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(args, { cwd, out: (t) => out.push(`${t}\n`), err: (t) => err.push(`${t}\n`) });
  return { code, stdout: out.join(""), stderr: err.join("") };
}

/** Runs the real program in a child process. */
async function spawned(args: string[], cwd: string) {
  try {
    const { stdout, stderr } = await run(process.execPath, [...programArgs("scripts/cli/context-host.ts"), ...args], { cwd });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

describe("context-host render", function () {
  this.timeout(30_000);
  let dir: string;

  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "render-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("prints core sources first, then plugin sources in key order, and exits 0 when every plugin loaded", async () => {
    writeFileSync(path.join(dir, "zeta.ts"), plugin("zeta", ["b", "a"]));
    writeFileSync(path.join(dir, "alpha.ts"), plugin("alpha", ["z"]));
    const { code, stdout } = await cli(["render", "--plugins", dir, "--location", dir], dir);
    expect(code).to.equal(0);
    const order = ["Today's date is", "<environment>", "alpha/z is", "zeta/a is", "zeta/b is"].map((t) => stdout.indexOf(t));
    expect(order.every((at) => at >= 0)).to.equal(true);
    expect([...order].sort((a, b) => a - b)).to.deep.equal(order);
  });

  it("--json gives baseline, snapshot, plugins and diagnostics", async () => {
    writeFileSync(path.join(dir, "alpha.ts"), plugin("alpha", ["x"]));
    const { code, stdout } = await cli(["render", "--plugins", dir, "--location", dir, "--json"], dir);
    expect(code).to.equal(0);
    const json = JSON.parse(stdout);
    expect(json.baseline).to.contain("alpha/x is x-value");
    expect(json.snapshot["alpha/x"]).to.deep.equal({ value: "x-value" });
    // `observed`: what each loader returned (a value, absent or unavailable): why a source may be missing.
    expect(json.plugins).to.deep.equal([
      {
        name: "alpha",
        file: path.join(dir, "alpha.ts"),
        origin: { kind: "folder", folder: dir },
        generation: 1,
        keys: ["alpha/x"],
        observed: { "alpha/x": "value" },
      },
    ]);
    expect(json.diagnostics).to.deep.equal([]);
  });

  it("exits 2 when a plugin failed, still rendering the rest, with the diagnostic on stderr", async () => {
    writeFileSync(path.join(dir, "alpha.ts"), plugin("alpha", ["x"]));
    writeFileSync(path.join(dir, "broken.ts"), plugin("broken", ["x"], 'throw new Error("broken at import");'));
    const { code, stdout, stderr } = await cli(["render", "--plugins", dir, "--location", dir], dir);
    expect(code).to.equal(2);
    expect(stdout).to.contain("alpha/x is x-value");
    expect(stderr).to.contain("broken.ts:3").and.contain("broken at import");
  });

  it("--plugins replaces the default folder rather than adding to it", async () => {
    const other = mkdtempSync(path.join(os.tmpdir(), "render-other-"));
    try {
      writeFileSync(path.join(other, "other.ts"), plugin("other", ["x"]));
      const { stdout } = await cli(["render", "--plugins", other, "--location", dir], path.resolve("."));
      expect(stdout).to.contain("other/x is");
      expect(stdout).not.to.contain("Package scripts");
    } finally {
      rmSync(other, { recursive: true, force: true });
    }
  });

  it("exits 3 with the keys on stderr when a core source blocks initialization", async () => {
    const out: string[] = [];
    const err: string[] = [];
    const blocked = SystemContext.make({
      key: "core/flaky",
      schema: Type.String(),
      load: () => SystemContext.unavailable,
      baseline: (v) => v,
      update: (_p, v) => v,
    });
    const code = await render({
      plugins: [dir],
      json: false,
      location: dir,
      core: [{ key: "core/flaky", load: () => blocked }],
      out: (t) => out.push(t),
      err: (t) => err.push(t),
    });
    expect(code).to.equal(3);
    expect(err.join("\n")).to.contain("core/flaky");
    expect(out).to.deep.equal([]);
  });

  it("the program itself renders and exits with render's code (one spawned run)", async () => {
    writeFileSync(path.join(dir, "alpha.ts"), plugin("alpha", ["x"]));
    writeFileSync(path.join(dir, "broken.ts"), plugin("broken", ["x"], 'throw new Error("broken at import");'));
    const { code, stdout, stderr } = await spawned(["render", "--plugins", dir, "--location", dir], root);
    expect(code).to.equal(2);
    expect(stdout).to.contain("Today's date is").and.contain("alpha/x is x-value");
    expect(stderr).to.contain("broken at import");
  });

  it("--config gives render the host's settings: the time zone and plugin settings", async () => {
    writeFileSync(
      path.join(dir, "configured.ts"),
      `import { definePlugin } from "context-host";
import Type from "typebox";
export default definePlugin({
  name: "configured",
  config: Type.Object({ greeting: Type.String() }),
  setup(api, config) {
    api.source({ key: "configured/greeting", schema: Type.String(), load: () => config.greeting,
      baseline: (v) => "greeting: " + v, update: (_p, v) => "greeting now: " + v });
  },
});`,
    );
    writeFileSync(
      path.join(dir, "settings.json"),
      JSON.stringify({ timeZone: "Pacific/Kiritimati", pluginSettings: { configured: { greeting: "kia ora" } } }),
    );
    const { code, stdout, stderr } = await cli(["render", "--plugins", dir, "--location", dir, "--config", "settings.json"], dir);
    expect(stderr).to.equal("");
    expect(code).to.equal(0);
    expect(stdout).to.contain("(Pacific/Kiritimati).").and.contain("greeting: kia ora");
    // --settings is the same option, and context-host.json in the working folder is read unnamed.
    const named = await cli(["render", "--plugins", dir, "--location", dir, "--settings", "settings.json"], dir);
    expect(named.stdout).to.equal(stdout);
    renameSync(path.join(dir, "settings.json"), path.join(dir, "context-host.json"));
    const unnamed = await cli(["render", "--plugins", dir, "--location", dir], dir);
    expect([unnamed.code, unnamed.stdout]).to.deep.equal([0, stdout]);
  });

  it("--config with a bad setting is bad usage naming the file and the setting", async () => {
    writeFileSync(path.join(dir, "settings.json"), JSON.stringify({ timeZone: "Mars/Olympus" }));
    const { code, stderr } = await cli(["render", "--config", "settings.json"], dir);
    expect(code).to.equal(64);
    expect(stderr).to.contain("settings.json").and.contain("timeZone").and.contain("Mars/Olympus");
  });

  it("rejects an unknown argument with exit 64 and the usage", async () => {
    const { code, stderr } = await cli(["render", "--frobnicate"], dir);
    expect(code).to.equal(64);
    expect(stderr).to.contain("unknown argument").and.contain("usage:");
  });
});
