// A table of bad plugins. Each one is contained with the diagnostic that names what
// went wrong and where (phase, plugin, file, line, key), while a good plugin in the
// same folder keeps serving: its source still composes and renders.

import fs from "node:fs";
import path from "node:path";
import { expect } from "chai";
import type { Diagnostic } from "../../core/base/diagnostics.ts";
import { formatDiagnostic } from "../../core/base/diagnostics.ts";
import * as SystemContext from "../../core/system-context.ts";
import {
  baselineOf,
  eventually,
  logLines,
  type RunningHost,
  type StartOptions,
  textPlugin,
  usePluginHarness,
  write,
} from "./harness.ts";

/** Marks the line a diagnostic must point at. */
const here = "// ← here";
/** A source declaration marked as the line its diagnostics point at (when no line of the plugin threw). */
const declared = `api.source({ ${here}`;

function pluginCode(name: string, setup: string, { before = "", async = false } = {}): string {
  return `import { definePlugin } from "context-host";
import Type from "typebox";
${before}
export default definePlugin({
  name: ${JSON.stringify(name)},
  ${async ? "async " : ""}setup(api) {
${setup}
  },
});
`;
}

interface SourceFields {
  schema?: string;
  load?: string;
  baseline?: string;
  update?: string;
  removed?: string;
  deadlineMs?: number;
}

function sourceCode(key: string, fields: SourceFields = {}, call = "api.source({"): string {
  return `    ${call}
      key: ${JSON.stringify(key)},
      schema: ${fields.schema ?? "Type.String()"},
      load: ${fields.load ?? '() => "fine"'},
      baseline: ${fields.baseline ?? '(value) => "bad: " + value'},
      update: ${fields.update ?? '(_previous, value) => "bad is now " + value'},${
        fields.removed === undefined ? "" : `\n      removed: ${fields.removed},`
      }${fields.deadlineMs === undefined ? "" : `\n      deadlineMs: ${fields.deadlineMs},`}
    });`;
}

interface Context {
  readonly running: RunningHost;
  readonly folder: string;
  readonly log: string;
}

interface BadPlugin {
  /** The class of fault, as the test names it. */
  readonly fault: string;
  /** Files of the bad plugin(s), relative to the plugin folder; `{log}` becomes the folder's log file. */
  readonly files: Readonly<Record<string, string>>;
  readonly options?: StartOptions;
  /** What brings the fault about after start (a boundary, an edit, a deletion). */
  readonly act?: (context: Context) => Promise<void>;
  /** The diagnostic that must be emitted. `line` is the line marked `here` in `file`. */
  readonly diagnostic?: {
    readonly phase: Diagnostic["phase"];
    readonly plugin: string;
    readonly file: string;
    readonly key?: string;
    readonly hasLine?: boolean;
    readonly message: RegExp;
  };
  /** The plugin file is listed among failures (it never activated, or its latest load failed). */
  readonly isFailure?: boolean;
  /** The plugin's entry file, when the diagnostic points at another file it imports. */
  readonly entry?: string;
  /** Keys of the bad plugin(s) that still serve after the fault (besides the good plugin's). */
  readonly stillServing?: readonly string[];
  /** Extra checks once the diagnostic is there. */
  readonly verify?: (context: Context) => Promise<void>;
}

/** A boundary: the first one initializes, which observes every source once. */
async function boundary({ running }: Context): Promise<void> {
  await baselineOf(running);
}

const badPlugins: BadPlugin[] = [
  {
    fault: "a syntax error",
    files: {
      "broken-syntax.ts": pluginCode("broken", `    const value = ; ${here}`),
    },
    diagnostic: { phase: "bundle", plugin: "broken-syntax", file: "broken-syntax.ts", hasLine: true, message: /Unexpected/ },
    isFailure: true,
  },
  {
    fault: "a throw at import (module top level)",
    files: {
      "throws-at-import.ts": pluginCode("importer", sourceCode("importer/x"), {
        before: `throw new Error("cannot start"); ${here}`,
      }),
    },
    diagnostic: {
      phase: "evaluate",
      plugin: "throws-at-import",
      file: "throws-at-import.ts",
      hasLine: true,
      message: /module code threw: cannot start/,
    },
    isFailure: true,
  },
  {
    fault: "a throw at import inside a local file the plugin imports",
    files: {
      "lib/config.ts": `export const settings = { ready: false };\nthrow new Error("config file is corrupt"); ${here}\n`,
      "imports-bad.ts": pluginCode("importsbad", sourceCode("importsbad/x"), {
        before: 'import { settings } from "./lib/config.ts";\nvoid settings;',
      }),
    },
    entry: "imports-bad.ts",
    diagnostic: {
      phase: "evaluate",
      plugin: "imports-bad",
      file: "lib/config.ts",
      hasLine: true,
      message: /config file is corrupt/,
    },
    isFailure: true,
  },
  {
    fault: "an import of the host's store entry (context-host/store)",
    files: {
      "reaches-store.ts": pluginCode("reacher", sourceCode("reacher/x"), {
        before: 'import { SqliteSessionStore } from "context-host/store";\nvoid SqliteSessionStore;',
      }),
    },
    diagnostic: {
      phase: "evaluate",
      plugin: "reaches-store",
      file: "reaches-store.ts",
      message:
        /reaches-store\.ts: import of "context-host\/store" refused; only "context-host" and "context-host\/plugin" are available to plugins/,
    },
    isFailure: true,
  },
  {
    fault: "an import of the host's conformance entry (context-host/conformance)",
    files: {
      "reaches-kit.ts": pluginCode("kit", sourceCode("kit/x"), {
        before: 'import { checkPlugin } from "context-host/conformance";\nvoid checkPlugin;',
      }),
    },
    diagnostic: {
      phase: "evaluate",
      plugin: "reaches-kit",
      file: "reaches-kit.ts",
      message:
        /reaches-kit\.ts: import of "context-host\/conformance" refused; only "context-host" and "context-host\/plugin" are available to plugins/,
    },
    isFailure: true,
  },
  {
    fault: "a throw in setup",
    files: {
      "bad.ts": pluginCode("bad", `    throw new Error("setup failed on purpose"); ${here}`),
    },
    diagnostic: { phase: "setup", plugin: "bad", file: "bad.ts", hasLine: true, message: /setup threw: setup failed on purpose/ },
    isFailure: true,
  },
  {
    fault: "a setup that runs past its deadline",
    files: {
      "bad.ts": pluginCode("bad", "    await new Promise(() => {});", { async: true }),
    },
    options: { setupDeadlineMs: 100 },
    diagnostic: { phase: "setup", plugin: "bad", file: "bad.ts", message: /setup missed its deadline of 100 ms/ },
    isFailure: true,
  },
  {
    fault: "a source key outside the plugin's namespace",
    files: {
      "bad.ts": pluginCode("bad", sourceCode("other/thing", {}, `api.source({ ${here}`)),
    },
    diagnostic: {
      phase: "setup",
      plugin: "bad",
      file: "bad.ts",
      key: "other/thing",
      hasLine: true,
      message: /outside the plugin's namespace "bad\/"/,
    },
    isFailure: true,
  },
  {
    fault: "an invalid source key",
    files: {
      "bad.ts": pluginCode("bad", sourceCode("bad/Not A Key")),
    },
    diagnostic: { phase: "setup", plugin: "bad", file: "bad.ts", key: "bad/Not A Key", message: /invalid source key/ },
    isFailure: true,
  },
  {
    fault: "a duplicate source key",
    files: {
      "bad.ts": pluginCode("bad", `${sourceCode("bad/twice")}\n${sourceCode("bad/twice", {}, `api.source({ ${here}`)}`),
    },
    diagnostic: { phase: "setup", plugin: "bad", file: "bad.ts", key: "bad/twice", hasLine: true, message: /declared twice/ },
    isFailure: true,
  },
  {
    fault: "a duplicate namespace (the path that sorts first keeps it)",
    files: {
      "a-first.ts": textPlugin({ name: "twin", value: "from a-first" }),
      "b-second.ts": textPlugin({ name: "twin", value: "from b-second" }),
    },
    diagnostic: {
      phase: "namespace",
      plugin: "twin",
      file: "b-second.ts",
      message: /a-first\.ts[\s\S]*b-second\.ts|b-second\.ts[\s\S]*a-first\.ts/,
    },
    isFailure: true,
    stillServing: ["twin/status"],
    async verify({ running, folder }) {
      expect(running.host.plugins().find((p) => p.name === "twin")?.file).to.equal(path.join(folder, "a-first.ts"));
      expect((await baselineOf(running)).baseline).to.contain("twin: from a-first");
    },
  },
  {
    fault: "the reserved core namespace",
    files: {
      "pretender.ts": pluginCode("core", sourceCode("core/date")),
    },
    diagnostic: { phase: "namespace", plugin: "core", file: "pretender.ts", message: /"core" is reserved/ },
    isFailure: true,
  },
  {
    fault: "an invalid plugin name",
    files: {
      "bad.ts": pluginCode("Bad Name", sourceCode("bad/x")),
    },
    diagnostic: { phase: "setup", plugin: "bad", file: "bad.ts", message: /invalid plugin name "Bad Name"/ },
    isFailure: true,
  },
  {
    fault: "no default export",
    files: {
      "no-default.ts": pluginCode("nodefault", sourceCode("nodefault/x")).replace(
        "export default definePlugin",
        "export const plugin = definePlugin",
      ),
    },
    diagnostic: { phase: "evaluate", plugin: "no-default", file: "no-default.ts", message: /does not default-export a plugin/ },
    isFailure: true,
  },
  {
    fault: "config that fails its schema",
    files: {
      "bad.ts": pluginCode(
        "bad",
        `    require("node:fs").appendFileSync("{log}", "setup ran\\n");\n${sourceCode("bad/x")}`,
      ).replace('name: "bad",', 'name: "bad",\n  config: Type.Object({ city: Type.String() }),'),
    },
    options: { settings: { bad: { city: 42 } } },
    diagnostic: { phase: "config", plugin: "bad", file: "bad.ts", message: /config rejected at \/city/ },
    isFailure: true,
    async verify({ log }) {
      expect(logLines(log), "setup must not run with a rejected config").to.deep.equal([]);
    },
  },
  {
    fault: "a throwing loader",
    files: {
      "bad.ts": pluginCode(
        "bad",
        sourceCode("bad/reading", { load: `() => {\n        throw new Error("sensor offline"); ${here}\n      }` }),
      ),
    },
    act: boundary,
    diagnostic: { phase: "load", plugin: "bad", file: "bad.ts", key: "bad/reading", hasLine: true, message: /sensor offline/ },
  },
  {
    fault: "a hanging loader (the host's deadline)",
    files: {
      "bad.ts": pluginCode("bad", sourceCode("bad/reading", { load: "() => new Promise(() => {})" })),
    },
    options: { deadlineMs: 100 },
    act: boundary,
    diagnostic: { phase: "load", plugin: "bad", file: "bad.ts", key: "bad/reading", message: /deadline of 100 ms/ },
  },
  {
    fault: "a hanging loader (its own deadline)",
    files: {
      "bad.ts": pluginCode("bad", sourceCode("bad/reading", { load: "() => new Promise(() => {})", deadlineMs: 60 })),
    },
    act: boundary,
    diagnostic: { phase: "load", plugin: "bad", file: "bad.ts", key: "bad/reading", message: /deadline of 60 ms/ },
  },
  {
    fault: "a value its schema rejects",
    files: {
      "bad.ts": pluginCode("bad", sourceCode("bad/count", { schema: "Type.Integer()", load: '() => "many"' }, declared)),
    },
    act: boundary,
    // No line of the plugin's threw: the place is where the source was declared.
    diagnostic: {
      phase: "value",
      plugin: "bad",
      file: "bad.ts",
      key: "bad/count",
      hasLine: true,
      message: /rejected by its schema/,
    },
  },
  {
    fault: "a throwing renderer",
    files: {
      "bad.ts": pluginCode(
        "bad",
        sourceCode("bad/text", { baseline: `() => {\n        throw new Error("cannot render"); ${here}\n      }` }),
      ),
    },
    act: boundary,
    diagnostic: { phase: "baseline", plugin: "bad", file: "bad.ts", key: "bad/text", hasLine: true, message: /cannot render/ },
  },
  {
    fault: "a throwing update renderer (at a later boundary)",
    files: {
      "bad.ts": pluginCode(
        "bad",
        sourceCode("bad/counter", {
          schema: "Type.Integer()",
          load: "() => ++observed",
          baseline: '(n) => "observed " + n',
          update: `() => {\n        throw new Error("no update text"); ${here}\n      }`,
        }),
        { before: "let observed = 0;" },
      ),
    },
    async act({ running }) {
      const generation = await baselineOf(running);
      await SystemContext.reconcile(await running.registry.compose({ location: running.location }), generation.snapshot);
    },
    diagnostic: { phase: "update", plugin: "bad", file: "bad.ts", key: "bad/counter", hasLine: true, message: /no update text/ },
    stillServing: ["bad/counter"],
  },
  {
    fault: "a throwing removal renderer",
    files: {
      "bad.ts": pluginCode(
        "bad",
        sourceCode("bad/text", { removed: `() => {\n        throw new Error("cannot say goodbye"); ${here}\n      }` }),
      ),
    },
    act: boundary,
    diagnostic: {
      phase: "removed",
      plugin: "bad",
      file: "bad.ts",
      key: "bad/text",
      hasLine: true,
      message: /cannot say goodbye/,
    },
  },
  {
    fault: "an empty rendering",
    files: {
      "bad.ts": pluginCode("bad", sourceCode("bad/text", { baseline: '() => ""' }, declared)),
    },
    act: boundary,
    diagnostic: { phase: "baseline", plugin: "bad", file: "bad.ts", key: "bad/text", hasLine: true, message: /empty text/ },
  },
  {
    fault: "an oversize rendering",
    files: {
      "bad.ts": pluginCode("bad", sourceCode("bad/text", { baseline: "(value) => value.repeat(100)" })),
    },
    options: { maxTextLength: 50 },
    act: boundary,
    diagnostic: {
      phase: "baseline",
      plugin: "bad",
      file: "bad.ts",
      key: "bad/text",
      message: /400 characters, over the limit of 50/,
    },
  },
  {
    fault: "a disposer that throws (on reload)",
    files: {
      "bad.ts": pluginCode(
        "bad",
        `    api.onDispose(() => {\n      throw new Error("cannot let go");\n    });\n${sourceCode("bad/text")}`,
      ),
    },
    async act({ folder }) {
      write(path.join(folder, "bad.ts"), pluginCode("bad", sourceCode("bad/text", { load: '() => "reloaded"' })));
    },
    diagnostic: { phase: "dispose", plugin: "bad", file: "bad.ts", message: /cannot let go/ },
    stillServing: ["bad/text"],
    async verify({ running }) {
      await eventually(() => running.host.plugins().find((p) => p.name === "bad")?.generation === 2, "the reloaded generation");
      expect((await baselineOf(running)).baseline).to.contain("bad: reloaded");
    },
  },
  {
    fault: "a plugin deleted mid-reload",
    files: {
      "doomed.ts": textPlugin({ name: "doomed", value: "v1", tag: "v1", log: "{log}" }),
    },
    async act({ folder, log, running }) {
      const file = path.join(folder, "doomed.ts");
      write(file, textPlugin({ name: "doomed", value: "v2", tag: "v2", log, setupDelayMs: 250 }));
      await eventually(() => logLines(log).includes("setup v2"), "the reload's setup to start");
      fs.rmSync(file);
      await eventually(() => running.events.some((e) => e.kind === "removed" && e.plugin === "doomed"), "the plugin's removal");
    },
    async verify({ running, log }) {
      expect(running.host.plugins().map((p) => p.name)).to.deep.equal(["good"]);
      // Both the active generation and the one being built when the file went are disposed, once each.
      await eventually(() => logLines(log).length === 4, "both generations to be disposed");
      expect(logLines(log)).to.have.members(["setup v1", "setup v2", "dispose v1", "dispose v2"]);
      await running.host.settled();
      expect(running.host.failures()).to.deep.equal([]);
    },
  },
];

describe("Plugin host: bad plugins are contained", () => {
  const harness = usePluginHarness();

  it("the table holds at least 15 classes of bad plugin", () => {
    expect(badPlugins.length).to.be.at.least(15);
  });

  // One list of cases, on both transports of the plugin runner: its own worker, the host's thread.
  for (const isolation of ["worker", "none"] as const)
    for (const bad of badPlugins) {
      const named = bad.diagnostic === undefined ? "" : ` with a ${bad.diagnostic.phase} diagnostic`;
      it(`${bad.fault} is contained${named} while a good plugin keeps serving (isolation ${isolation})`, async () => {
        const folder = harness.tempFolder();
        const log = path.join(folder, "lifecycle.log");
        write(path.join(folder, "good.ts"), textPlugin({ name: "good", value: "serving" }));
        for (const [file, code] of Object.entries(bad.files)) write(path.join(folder, file), code.replaceAll("{log}", log));
        const running = await harness.start({ folders: [folder], isolation, ...bad.options });
        const context: Context = { running, folder, log };
        await bad.act?.(context);

        const expected = bad.diagnostic;
        if (expected !== undefined) {
          const file = path.join(folder, expected.file);
          const diagnostic = await eventually(
            () => running.host.diagnostics.find((d) => d.phase === expected.phase && d.file === file),
            `a ${expected.phase} diagnostic for ${expected.file} (have: ${JSON.stringify(running.host.diagnostics)})`,
          );
          expect(diagnostic.plugin, "plugin").to.equal(expected.plugin);
          expect(diagnostic.message, "message").to.match(expected.message);
          if (expected.key !== undefined) expect(diagnostic.key, "key").to.equal(expected.key);
          if (expected.hasLine) {
            const code = (bad.files[expected.file] as string).replaceAll("{log}", log);
            expect(diagnostic.line, "line").to.equal(code.split("\n").findIndex((line) => line.includes(here)) + 1);
            expect(diagnostic.lineText, "lineText").to.contain(here);
          }
        }
        if (bad.isFailure) {
          const failures = running.host.failures().map((f) => path.relative(folder, f.file));
          expect(failures).to.include(bad.entry ?? expected?.file);
        }
        await bad.verify?.(context);

        // The good plugin keeps serving: its source composes and renders; nothing bad is admitted.
        expect(running.host.plugins().find((p) => p.name === "good")?.generation).to.equal(1);
        const generation = await baselineOf(running);
        expect(generation.baseline.split("\n\n")).to.include("good: serving");
        expect(Object.keys(generation.snapshot)).to.have.members(["good/status", ...(bad.stillServing ?? [])]);
      });
    }

  it("a diagnostic prints as a short code frame at the plugin's own line", async () => {
    const folder = harness.tempFolder();
    const code = pluginCode("bad", `    throw new Error("setup failed on purpose"); ${here}`);
    write(path.join(folder, "bad.ts"), code);
    const running = await harness.start({ folders: [folder] });
    const diagnostic = running.host.diagnostics[0] as Diagnostic;
    const line = code.split("\n").findIndex((text) => text.includes(here)) + 1;
    expect(formatDiagnostic(diagnostic, folder)).to.equal(
      [
        `bad.ts:${line}:11 [bad setup] setup threw: setup failed on purpose`,
        `${line} |     throw new Error("setup failed on purpose"); ${here}`,
        `${" ".repeat(String(line).length)} |           ^`,
      ].join("\n"),
    );
  });

  it("diagnostics reach subscribers as they happen", async () => {
    const folder = harness.tempFolder();
    write(path.join(folder, "good.ts"), textPlugin({ name: "good", value: "serving" }));
    const running = await harness.start({ folders: [folder] });
    write(path.join(folder, "late.ts"), pluginCode("late", '    throw new Error("late failure");'));
    await eventually(() => running.events.some((e) => e.kind === "diagnostic"), "a diagnostic event");
    const event = running.events.find((e) => e.kind === "diagnostic");
    expect(event).to.deep.include({ kind: "diagnostic" });
    expect(event?.kind === "diagnostic" && event.diagnostic).to.include({ plugin: "late", phase: "setup" });
  });
});
