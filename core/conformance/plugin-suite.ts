// Owns `describePluginConformance`: the checks of `context-host check` as test cases, for
// plugin authors' own suites. One case per check, so a failing check is named by the
// runner; warnings are printed in the case's failure message only when they are errors.

import { type CheckName, type CheckPluginOptions, checkPlugin, formatFinding, type PluginFinding } from "./check-plugin.ts";
import { ConformanceSetupInvalid } from "./errors.ts";

/** The test functions a suite is declared with: mocha's globals by default (BDD style). */
export interface TestRunner {
  describe(title: string, body: () => void): unknown;
  it(title: string, body: () => Promise<void> | void): unknown;
  before(body: () => Promise<void> | void): unknown;
}

/** Every check, in the order `check` runs them. */
export const checkNames: readonly CheckName[] = [
  "plugin-loads",
  "import-side-effects",
  "setup-repeats",
  "dispose-releases",
  "loader-settles",
  "value-schema",
  "round-trip",
  "volatile-value",
  "removal-renderer",
  "renderer-throws",
  "renderer-text",
  "renderer-pure",
  "renderer-mutates",
  "renderer-clock",
  "update-new-state",
  "update-repeats-previous",
];

function globalRunner(): TestRunner {
  const g = globalThis as unknown as Partial<TestRunner>;
  if (typeof g.describe !== "function" || typeof g.it !== "function" || typeof g.before !== "function") {
    throw new ConformanceSetupInvalid({
      suite: "describePluginConformance",
      reason: "no describe/it/before globals; run it under mocha or pass `runner` in the options",
    });
  }
  return g as TestRunner;
}

/** Declares one test case per conformance check of the plugin at `pluginPath`. */
export function describePluginConformance(
  pluginPath: string,
  options: CheckPluginOptions & { readonly runner?: TestRunner; readonly strict?: boolean } = {},
): void {
  const runner = options.runner ?? globalRunner();
  runner.describe(`plugin conformance: ${pluginPath}`, () => {
    let findings: PluginFinding[] = [];
    runner.before(async () => {
      findings = await checkPlugin(pluginPath, options);
    });
    for (const name of checkNames) {
      runner.it(name, () => {
        const failing = findings.filter((f) => f.check === name && (f.severity === "error" || options.strict === true));
        if (failing.length > 0) throw new Error(failing.map((f) => formatFinding(f)).join("\n"));
      });
    }
  });
}
