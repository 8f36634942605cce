// check ⊇ host: each of our buggy plugins (test/conformance/fixtures/defects, one defect each)
// runs through a real host — the composition root every host starts its sources with, two
// boundaries, then closing — and through `check` (isolated, as the command runs it). Every
// diagnostic the host gives about a plugin must have a matching `check` finding: an error of
// a rule that answers for the diagnostic's phase, naming the same key. The fixtures make
// every plugin phase happen, so a runtime check added without a `check` rule fails here.

import { readdirSync } from "node:fs";
import path from "node:path";
import { expect } from "chai";
import { silentLogger } from "../../core/base/clock.ts";
import type { Diagnostic } from "../../core/base/diagnostics.ts";
import { Scope } from "../../core/base/scope.ts";
import { checkPluginsIsolated } from "../../core/conformance/check-isolated.ts";
import type { PluginFinding } from "../../core/conformance/check-plugin.ts";
import { conformanceRules, type PluginPhase, rulesForPhase } from "../../core/conformance/rules.ts";
import { startContextSources } from "../../core/host/context-sources.ts";
import { initialize, reconcile } from "../../core/system-context/index.ts";

const fixtures = path.resolve(import.meta.dirname, "fixtures/defects");

/** The host's deadlines for this file, and the same given to `check`: small, so the hangs end soon. */
const deadlines = { deadlineMs: 500, setupDeadlineMs: 1500, disposeDeadlineMs: 500 };

/**
 * Each fixture, the rule `check` must fail it with, and the key that rule must name (none for a
 * plugin-level one); `undefined` for the good plugin whose namespace another fixture takes too.
 */
const expected: Record<string, { readonly rule: string; readonly key?: string } | undefined> = {
  "namespace-taken-a": undefined,
  "namespace-taken-b": { rule: "plugin-loads" },
  "missing-import": { rule: "plugin-loads" },
  "module-throws": { rule: "plugin-loads" },
  "module-spins": { rule: "plugin-loads" },
  "no-default-export": { rule: "plugin-loads" },
  "config-rejected": { rule: "plugin-loads" },
  "setup-throws": { rule: "plugin-loads" },
  "setup-never-settles": { rule: "plugin-loads" },
  "key-outside-namespace": { rule: "plugin-loads", key: "other/value" },
  "reserved-name": { rule: "plugin-loads" },
  "loader-throws": { rule: "loader-settles", key: "loader-throws/value" },
  "loader-never-settles": { rule: "loader-settles", key: "loader-never-settles/value" },
  "loader-spins": { rule: "loader-settles", key: "loader-spins/value" },
  "loader-exits": { rule: "loader-settles", key: "loader-exits/value" },
  "value-mismatch": { rule: "value-schema", key: "value-mismatch/count" },
  "value-too-large": { rule: "value-schema", key: "value-too-large/text" },
  "value-too-deep": { rule: "value-schema", key: "value-too-deep/value" },
  "value-not-plain": { rule: "value-schema", key: "value-not-plain/value" },
  "codec-lossy": { rule: "round-trip", key: "codec-lossy/name" },
  "baseline-throws": { rule: "renderer-throws", key: "baseline-throws/value" },
  "baseline-surrogate": { rule: "renderer-text", key: "baseline-surrogate/value" },
  "update-empty": { rule: "renderer-text", key: "update-empty/value" },
  "removed-too-long": { rule: "renderer-text", key: "removed-too-long/value" },
  "renderer-spins": { rule: "renderer-settles", key: "renderer-spins/value" },
  "renderer-exits": { rule: "renderer-settles", key: "renderer-exits/value" },
  "baseline-not-text": { rule: "renderer-text", key: "baseline-not-text/value" },
  "disposer-throws": { rule: "dispose-releases" },
  "disposer-never-settles": { rule: "dispose-releases" },
};

/** Every plugin phase (a phase added to `DiagnosticPhase` makes this fail to type-check until it is listed). */
const pluginPhases: Record<PluginPhase, true> = {
  bundle: true,
  evaluate: true,
  config: true,
  setup: true,
  namespace: true,
  load: true,
  value: true,
  baseline: true,
  update: true,
  removed: true,
  dispose: true,
};

const nameOf = (file: string) => path.basename(file, ".ts");

describe("check ⊇ host: every diagnostic the host gives about our buggy plugins has a matching check finding", function () {
  this.timeout(60_000);
  const files = readdirSync(fixtures)
    .filter((file) => file.endsWith(".ts"))
    .sort()
    .map((file) => path.join(fixtures, file));
  let diagnostics: Diagnostic[] = [];
  const findings = new Map<string, PluginFinding[]>();

  before(async () => {
    const scope = new Scope("pairing host");
    const host = await startContextSources(
      { cwd: fixtures, plugins: [fixtures], watch: false, logger: silentLogger, ...deadlines },
      scope,
    );
    try {
      // Two boundaries, as a session makes them: the first renders baselines and removal texts, the second updates.
      const env = { location: fixtures };
      const first = await initialize(await host.compose(env));
      await reconcile(await host.compose(env), first.snapshot);
    } finally {
      // Closing runs every generation's disposers.
      await scope.close().catch(() => {});
      diagnostics = host.diagnostics.history.filter((d) => d.origin === "plugin");
    }
    // All of them together, as `check` of the folder checks them (two files declare one namespace); two at a time.
    const all = await checkPluginsIsolated(files, { location: fixtures, ...deadlines, concurrency: 2 });
    for (const file of files) findings.set(nameOf(file), []);
    for (const finding of all) findings.get(nameOf(finding.file))?.push(finding);
  });

  it("every fixture is listed with the rule check must fail it with", () => {
    expect(files.map(nameOf)).to.have.members(Object.keys(expected));
  });

  it("every plugin phase has a check rule, and the host reported every one of them about the fixtures", () => {
    const phases = Object.keys(pluginPhases) as PluginPhase[];
    expect(phases.filter((phase) => rulesForPhase(phase).length === 0)).to.deep.equal([]);
    const reported = new Set(diagnostics.map((d) => d.phase));
    expect(phases.filter((phase) => !reported.has(phase))).to.deep.equal([]);
    // And every phase a rule claims is a plugin phase.
    for (const rule of conformanceRules) for (const phase of rule.phases) expect(pluginPhases).to.have.property(phase);
  });

  it("each host diagnostic is matched by an error finding of a rule for its phase, naming its key", () => {
    const unmatched: string[] = [];
    for (const diagnostic of diagnostics) {
      const fixture = nameOf(diagnostic.file);
      const rules = new Set(rulesForPhase(diagnostic.phase).map((rule) => rule.name));
      const match = (findings.get(fixture) ?? []).find(
        (finding) =>
          finding.severity === "error" &&
          rules.has(finding.check) &&
          (diagnostic.key === undefined || finding.key === diagnostic.key),
      );
      if (match === undefined) {
        unmatched.push(
          `${fixture}: host ${diagnostic.phase} ${diagnostic.key ?? ""} "${diagnostic.message}" — check found ${JSON.stringify(
            (findings.get(fixture) ?? []).map((f) => `${f.check} ${f.key ?? ""}`),
          )}`,
        );
      }
    }
    expect(unmatched).to.deep.equal([]);
  });

  it("every buggy fixture but the lossy codec gives a host diagnostic (the codec's loss is what only check sees)", () => {
    const silent = Object.keys(expected).filter((fixture) => !diagnostics.some((d) => nameOf(d.file) === fixture));
    expect(silent.sort()).to.deep.equal(["codec-lossy", "namespace-taken-a"]);
  });

  it("the plugin that keeps its namespace passes check", () => {
    expect(findings.get("namespace-taken-a")).to.deep.equal([]);
  });

  for (const [fixture, wanted] of Object.entries(expected)) {
    if (wanted === undefined) continue;
    const { rule, key } = wanted;
    it(`${fixture}: check fails it with ${rule}${key === undefined ? "" : `, naming ${key}`}`, () => {
      const errors = (findings.get(fixture) ?? []).filter((f) => f.severity === "error");
      const named = errors.find((f) => f.check === rule && (key === undefined || f.key === key));
      expect(named, JSON.stringify(errors, null, 1)).to.not.equal(undefined);
    });
  }

  it("a throwing loader's finding carries the line and column the host's diagnostic gives", () => {
    const host = diagnostics.find((d) => nameOf(d.file) === "loader-throws" && d.phase === "load");
    const found = findings.get("loader-throws")?.find((f) => f.check === "loader-settles");
    expect(host?.line).to.be.a("number");
    expect({ line: found?.line, column: found?.column, lineText: found?.lineText }).to.deep.equal({
      line: host?.line,
      column: host?.column,
      lineText: host?.lineText,
    });
  });
});
