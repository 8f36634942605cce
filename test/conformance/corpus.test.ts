// A corpus of buggy plugins of the kinds authors write, beyond the one-per-check fixtures
// of check.test.ts and the one-per-phase fixtures of pairing.test.ts: each is run through
// `checkPlugin` and must fail (an error finding) naming its source key — or, for a
// plugin-level bug, its plugin — while its good twin passes. The bugs hide where a single sample would miss them: only some values, only
// every other call, only nested fields.

import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { expect } from "chai";
import { checkPlugin, type PluginFinding } from "../../core/conformance/check-plugin.ts";

/** A plugin `corpus` with one source `corpus/item`; each part can be replaced by a buggy one. */
function plugin(parts: {
  top?: string;
  schema?: string;
  load?: string;
  baseline?: string;
  update?: string;
  removed?: string | null;
  setup?: string;
  key?: string;
}): string {
  const removed = parts.removed === null ? "" : `removed: ${parts.removed ?? '(p) => "Item " + p.name + " no longer applies."'},`;
  return `import { definePlugin, SystemContext } from "context-host";
import Type from "typebox";
void SystemContext;
${parts.top ?? ""}
export default definePlugin({
  name: "corpus",
  setup(api) {
    ${parts.setup ?? ""}
    api.source({
      key: ${JSON.stringify(parts.key ?? "corpus/item")},
      schema: ${parts.schema ?? "Type.Object({ name: Type.String({ minLength: 1 }), tags: Type.Array(Type.String()), size: Type.Integer({ minimum: 0, maximum: 1000 }) })"},
      load: ${parts.load ?? '() => ({ name: "alpha", tags: ["a", "b"], size: 3 })'},
      baseline: ${parts.baseline ?? '(v) => "Item " + v.name + " (" + v.size + "): " + (v.tags.length === 0 ? "no tags" : v.tags.join(", ")) + "."'},
      update: ${parts.update ?? '(_p, v) => "Item " + v.name + " is now size " + v.size + ", tags " + (v.tags.length === 0 ? "none" : v.tags.join(", ")) + "."'},
      ${removed}
    });
  },
});
`;
}

/** Each bug, the plugin parts that make it, and the check (or either of the checks) that must fail. */
const corpus: Array<[string, Parameters<typeof plugin>[0], string | string[]]> = [
  ["a loader returning a number where the schema has an object", { load: "() => 42" }, "value-schema"],
  ["a loader returning undefined", { load: "() => undefined" }, "value-schema"],
  [
    "a loader returning NaN in a number field",
    {
      schema: "Type.Object({ n: Type.Number() })",
      load: "() => ({ n: NaN })",
      baseline: '(v) => "n " + v.n',
      update: '(_p, v) => "n now " + v.n',
      removed: '(p) => "no n " + p.n',
    },
    "value-schema",
  ],
  [
    "a loader returning a Date inside the value",
    {
      schema: "Type.Object({ at: Type.Unknown() })",
      load: "() => ({ at: new Date(0) })",
      baseline: '(v) => "at " + String(v.at)',
      update: '(_p, v) => "at now " + String(v.at)',
      removed: '() => "no time"',
    },
    "value-schema",
  ],
  [
    "a loader that throws every other call",
    {
      top: "let calls = 0;",
      load: '() => { if (calls++ % 2 === 1) throw new Error("flaky"); return { name: "alpha", tags: [], size: 1 }; }',
    },
    "loader-settles",
  ],
  ["a loader that never settles", { load: "() => new Promise(() => {})" }, "loader-settles"],
  ["a baseline that is empty for an empty tag list", { baseline: '(v) => v.tags.join(", ")' }, "renderer-text"],
  ["a baseline returning a number", { baseline: "(v) => v.size" }, "renderer-text"],
  [
    "a baseline that throws for long names",
    { baseline: '(v) => { if (v.name.length > 3) throw new Error("too long"); return "Item " + v.name; }' },
    "renderer-throws",
  ],
  [
    "an update that reads the first tag of an empty list",
    { update: '(_p, v) => "First tag now " + v.tags[0].toUpperCase()' },
    "renderer-throws",
  ],
  ["a baseline over the size limit for big sizes", { baseline: '(v) => "x".repeat(v.size * 100)' }, "renderer-text"],
  [
    "a baseline that stamps the time",
    { baseline: '(v) => "Item " + v.name + " as of " + new Date().toISOString()' },
    "renderer-clock",
  ],
  [
    "an update that picks a random word",
    {
      update:
        '(_p, v) => ["Now", "Currently"][Math.floor(Math.random() * 2)] + " " + v.name + " " + v.size + " " + v.tags.join(",")',
    },
    "renderer-clock",
  ],
  [
    "a baseline that counts its calls",
    { top: "let n = 0;", baseline: '(v) => "Item " + v.name + " #" + (n++) + " " + v.size + " " + v.tags.join(",")' },
    "renderer-pure",
  ],
  [
    "a baseline that sorts the tags in place",
    { baseline: '(v) => "Tags " + v.tags.sort().join(", ") + " of " + v.name + " " + v.size' },
    "renderer-mutates",
  ],
  [
    "an update that pushes onto the previous value",
    { update: '(p, v) => { p.tags.push("seen"); return "Item " + v.name + " is now " + v.size + " " + v.tags.join(","); }' },
    "renderer-mutates",
  ],
  ["an update that only says something changed", { update: '() => "The item changed."' }, "update-new-state"],
  [
    "an update that renders the previous value",
    { update: '(p) => "Item " + p.name + " is size " + p.size + ", tags " + p.tags.join(", ") + "."' },
    ["update-repeats-previous", "update-new-state"],
  ],
  [
    "an update that ignores the size",
    { update: '(_p, v) => "Item " + v.name + " changed, tags " + v.tags.join(", ")' },
    "update-new-state",
  ],
  [
    "a loader returning a number for a string field (the host does not convert it)",
    { load: "() => ({ name: 7, tags: [], size: 1 })" },
    "value-schema",
  ],
  [
    "a loader returning a value nested deeper than the host's 64 levels",
    {
      schema: "Type.Object({ name: Type.String(), tree: Type.Unknown() })",
      load: '() => { let tree = {}; for (let i = 0; i < 70; i++) tree = { tree }; return { name: "deep", tree }; }',
      baseline: '(v) => "Tree " + v.name',
      update: '(_p, v) => "Tree now " + v.name + " " + JSON.stringify(v.tree).length',
      removed: '(p) => "No tree " + p.name',
    },
    "value-schema",
  ],
  [
    "a loader returning a string with a lone surrogate",
    { load: '() => ({ name: "alpha\\ud800", tags: [], size: 1 })' },
    "value-schema",
  ],
  [
    "a codec whose Encode throws for some values",
    {
      top: 'const Size = Type.Codec(Type.Integer({ minimum: 0, maximum: 1000 })).Decode((n) => n).Encode((n) => { if (n > 2) throw new Error("too big to store"); return n; });',
      schema: "Type.Object({ name: Type.String({ minLength: 1 }), tags: Type.Array(Type.String()), size: Size })",
    },
    "value-schema",
  ],
  [
    "a codec that lower-cases on Decode",
    {
      top: "const Name = Type.Codec(Type.String({ minLength: 1 })).Decode((s) => s.toLowerCase()).Encode((s) => s);",
      schema: "Type.Object({ name: Name, tags: Type.Array(Type.String()), size: Type.Integer({ minimum: 0, maximum: 1000 }) })",
      load: '() => ({ name: "Alpha", tags: [], size: 1 })',
    },
    "round-trip",
  ],
  [
    "a Date codec that drops the milliseconds",
    {
      top: "const When = Type.Codec(Type.Integer({ minimum: 0, maximum: 2e12 })).Decode((n) => new Date(n)).Encode((d) => Math.floor(d.getTime() / 1000) * 1000);",
      schema: "Type.Object({ name: Type.String({ minLength: 1 }), at: When })",
      load: '() => ({ name: "alpha", at: new Date(1_700_000_000_123) })',
      baseline: '(v) => "Item " + v.name + " at " + v.at.getTime()',
      update: '(_p, v) => "Item " + v.name + " now at " + v.at.getTime()',
      removed: '(p) => "Item " + p.name + " gone"',
    },
    "round-trip",
  ],
  [
    "a loader that resolves only after its deadline",
    { load: '() => new Promise((resolve) => setTimeout(() => resolve({ name: "late", tags: [], size: 1 }), 1500))' },
    "loader-settles",
  ],
  [
    "a baseline ending in half a surrogate pair",
    { baseline: '(v) => ("Item " + v.name + " (" + v.size + ") " + v.tags.join(", ") + " \\ud83d").trim()' },
    "renderer-text",
  ],
  ["a key outside the plugin's namespace", { key: "other/item" }, "plugin-loads"],
  ["a key in upper case", { key: "corpus/Item" }, "plugin-loads"],
  [
    "the same key registered twice",
    {
      setup:
        'api.source({ key: "corpus/item", schema: Type.String(), load: () => "x", baseline: (v) => v, update: (_p, v) => v });',
    },
    "plugin-loads",
  ],
  ["setup that throws", { setup: 'throw new Error("no config");' }, "plugin-loads"],
  ["a timeout started at import time", { top: "setTimeout(() => {}, 60_000);" }, "import-side-effects"],
  ["a watcher interval that dispose never clears", { setup: "setInterval(() => {}, 60_000);" }, "dispose-releases"],
];

describe("context-host check: a corpus of buggy plugins", function () {
  this.timeout(20_000);
  let dir: string;
  before(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "check-corpus-"));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  async function findingsOf(name: string, code: string): Promise<PluginFinding[]> {
    const file = path.join(dir, `${name}.ts`);
    writeFileSync(file, code);
    return checkPlugin(file, { deadlineMs: 200, samples: 40 });
  }

  it("the good twin passes", async () => {
    const findings = await findingsOf("good", plugin({}));
    expect(findings.map((f) => `${f.check}: ${f.message}`)).to.deep.equal([]);
  });

  corpus.forEach(([what, parts, expected], index) => {
    const checks = typeof expected === "string" ? [expected] : expected;
    const check = checks[0] as string;
    it(`${what}: fails ${check}, naming ${check === "plugin-loads" || check.includes("-side-") || check.startsWith("dispose") ? "the plugin" : "the key"}`, async () => {
      const findings = await findingsOf(`bug${index}`, plugin(parts));
      const errors = findings.filter((f) => f.severity === "error");
      const finding = errors.find((f) => checks.includes(f.check));
      expect(finding, `expected an error of ${checks.join(" or ")}: ${JSON.stringify(findings, null, 1)}`).to.not.equal(
        undefined,
      );
      if (finding === undefined) return;
      expect(finding.plugin).to.equal("corpus");
      if (!["plugin-loads", "import-side-effects", "dispose-releases", "setup-repeats"].includes(finding.check)) {
        expect(finding.key).to.equal("corpus/item");
      }
    });
  });
});
