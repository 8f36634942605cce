// What isolation bounds (decision 060): `context-host render` and `host.close()` finish in
// bounded time whatever plugins leave running, a plugin's global changes stay in its own
// worker, and values that arrive from a worker are checked (depth, size, texts).
// Under `npm run test:long`: `npm test` covers each of these fault classes in
// test/plugins/isolation.test.ts (the hostile suite) and the arrival checks in
// test/system-context/prerendered.test.ts; these are their in-process variants.

import { execFile } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";
import { expect } from "chai";
import { baselineOf, diagnosticsLike, textPlugin, usePluginHarness, write } from "./harness.ts";

const root = path.resolve(import.meta.dirname, "../..");
const bin = path.join(root, "scripts/cli/context-host.ts");
const run = promisify(execFile);

/** Runs `context-host render` from its source in a child process, with a time limit. */
async function render(folder: string, timeoutMs: number) {
  const started = performance.now();
  try {
    const { stdout, stderr } = await run(
      process.execPath,
      [
        "--import",
        "tsx",
        bin,
        "render",
        "--plugins",
        folder,
        "--location",
        folder,
        "--config",
        path.join(folder, "..", "config.json"),
      ],
      { cwd: root, timeout: timeoutMs, killSignal: "SIGKILL" },
    );
    return { code: 0, stdout, stderr, ms: performance.now() - started };
  } catch (error) {
    const failed = error as { code: number | null; stdout: string; stderr: string; killed?: boolean };
    return {
      code: failed.killed === true ? "killed" : failed.code,
      stdout: failed.stdout,
      stderr: failed.stderr,
      ms: performance.now() - started,
    };
  }
}

describe("Plugin workers: render and close finish whatever plugins leave running", () => {
  const harness = usePluginHarness();

  function project(): string {
    const base = harness.tempFolder("render-");
    write(path.join(base, "config.json"), JSON.stringify({ timeZone: "UTC" }));
    return path.join(base, "plugins");
  }

  it("render prints the Baseline and exits 2 when a plugin exits in setup and another leaks an interval and a disposer that never settles", async function () {
    this.timeout(30_000);
    const folder = project();
    write(
      path.join(folder, "leaky.ts"),
      textPlugin({ name: "leaky", value: "still here" }).replace(
        "async setup(api) {",
        "async setup(api) {\n    setInterval(() => {}, 10);\n    api.onDispose(() => new Promise(() => {}));",
      ),
    );
    write(
      path.join(folder, "quitter.ts"),
      `import { definePlugin } from "context-host";
export default definePlugin({ name: "quitter", setup() { process.exit(0); } });
`,
    );
    write(path.join(folder, "stayer.ts"), textPlugin({ name: "stayer", value: "present" }));
    const result = await render(folder, 25_000);
    expect(result.code, result.stderr).to.equal(2);
    expect(result.stdout).to.contain("leaky: still here\n\nstayer: present");
    expect(result.stderr).to.contain("[quitter setup]").and.contain("exited with code 0");
  });

  it("close stops a worker stuck in a loop in a timer at the dispose deadline", async () => {
    const folder = harness.tempFolder();
    write(
      path.join(folder, "looper.ts"),
      textPlugin({ name: "looper", value: "v" }).replace(
        "async setup(api) {",
        "async setup(api) {\n    setTimeout(() => { for (;;) {} }, 20);",
      ),
    );
    const running = await harness.start({ folders: [folder], watch: false, disposeDeadlineMs: 300 });
    await new Promise((resolve) => setTimeout(resolve, 60));
    // Close returns because the dispose deadline fired (named below), not at a wall-clock bound.
    await running.host.close();
    expect(diagnosticsLike(running, { plugin: "looper", phase: "dispose" })[0]?.message).to.contain(
      "missed its deadline of 300 ms",
    );
  });
});

describe("Plugin workers: a plugin's globals are its own", () => {
  const harness = usePluginHarness();

  it("overridden JSON.stringify, Array.prototype.join and Object.prototype change nothing outside the plugin", async () => {
    const folder = harness.tempFolder();
    write(
      path.join(folder, "vandal.ts"),
      `import { definePlugin } from "context-host";

JSON.stringify = () => "INJECTED";
Array.prototype.join = function () { return "INJECTED"; };
Object.defineProperty(Object.prototype, "injected", { value: "INJECTED", enumerable: true, configurable: true });

export default definePlugin({ name: "vandal", setup() {} });
`,
    );
    write(path.join(folder, "victim.ts"), textPlugin({ name: "victim", value: "untouched" }));
    const running = await harness.start({ folders: [folder], watch: false });
    const generation = await baselineOf(running);
    expect(generation.baseline).to.equal("victim: untouched");
    expect(JSON.stringify({ a: [1, 2] })).to.equal('{"a":[1,2]}');
    expect(["a", "b"].join("-")).to.equal("a-b");
    expect(Object.keys(generation.snapshot)).to.deep.equal(["victim/status"]);
    expect("injected" in {}).to.equal(false);
  });

  it("a plugin that replaces setTimeout in its worker still has its loaders' deadlines kept", async () => {
    const folder = harness.tempFolder();
    write(
      path.join(folder, "timeless.ts"),
      `import { definePlugin } from "context-host";
import Type from "typebox";

globalThis.setTimeout = (() => 0) as unknown as typeof setTimeout;

export default definePlugin({
  name: "timeless",
  setup(api) {
    api.source({
      key: "timeless/never",
      schema: Type.String(),
      deadlineMs: 100,
      load: () => new Promise<string>(() => {}),
      baseline: (value) => value,
      update: (_previous, value) => value,
    });
  },
});
`,
    );
    write(path.join(folder, "timely.ts"), textPlugin({ name: "timely", value: "on time" }));
    const running = await harness.start({ folders: [folder], watch: false });
    // The boundary completes because the loader's own deadline fired (named below).
    expect((await baselineOf(running)).baseline).to.equal("timely: on time");
    const [missed] = diagnosticsLike(running, { plugin: "timeless", phase: "load", key: "timeless/never" });
    expect(missed?.message).to.contain("loader timeless/never missed its deadline of 100 ms");
  });

  it("a value nested deeper than the limit, or a renderer throwing a prototype-less object, makes only that source unavailable", async () => {
    const folder = harness.tempFolder();
    write(
      path.join(folder, "deep.ts"),
      `import { definePlugin } from "context-host";
import Type from "typebox";

export default definePlugin({
  name: "deep",
  setup(api) {
    api.source({
      key: "deep/nested",
      schema: Type.Unknown(),
      load: () => {
        let value: unknown = 0;
        for (let i = 0; i < 3000; i++) value = [value];
        return value;
      },
      baseline: () => "deep",
      update: () => "deeper",
    });
    api.source({
      key: "deep/odd",
      schema: Type.String(),
      load: () => "x",
      baseline: () => { throw Object.create(null); },
      update: () => "y",
    });
  },
});
`,
    );
    write(path.join(folder, "shallow.ts"), textPlugin({ name: "shallow", value: "fine" }));
    const running = await harness.start({ folders: [folder], watch: false });
    expect((await baselineOf(running)).baseline).to.equal("shallow: fine");
    expect(diagnosticsLike(running, { plugin: "deep", key: "deep/nested", phase: "value" })[0]?.message).to.contain(
      "nested deeper than the limit of 64",
    );
    expect(diagnosticsLike(running, { plugin: "deep", key: "deep/odd", phase: "baseline" })).to.have.length(1);
  });
});
