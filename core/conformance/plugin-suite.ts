// Owns `describePluginConformance`: the rules of `context-host check` as test cases, for
// plugin authors' own suites. The same list of rules (rules.ts) and, by default, the same
// isolated run as the command (decision 111), so a test and `check` agree finding for
// finding. One case per rule, so a failing rule is named by the runner; warnings fail a
// case only under `strict`.

import { checkPluginIsolated, type IsolatedCheckOptions } from "./check-isolated.ts";
import type { CheckPluginOptions, PluginFinding } from "./check-plugin.ts";
import { checkPlugin, formatFinding } from "./check-plugin.ts";
import { ConformanceSetupInvalid } from "./errors.ts";
import { conformanceRules } from "./rules.ts";

export { checkNames } from "./rules.ts";

/** The test functions a suite is declared with: mocha's globals by default (BDD style). */
export interface TestRunner {
  describe(title: string, body: () => void): unknown;
  it(title: string, body: () => Promise<void> | void): unknown;
  before(body: () => Promise<void> | void): unknown;
}

/** How `describePluginConformance` checks the plugin, besides the check's own options. */
export interface PluginConformanceOptions extends IsolatedCheckOptions {
  /** Declares the cases with these functions instead of mocha's globals. */
  readonly runner?: TestRunner;
  /** Fail on warnings too. */
  readonly strict?: boolean;
  /**
   * `"worker"` (default): the plugin is checked in a worker of its own, as `context-host check`
   * does, so a loop, an exit or a loader that never settles is a finding naming its rule and key.
   * `"none"`: in the test's own thread (`checkPlugin`).
   */
  readonly isolation?: "worker" | "none";
}

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

/** Declares one test case per conformance rule of the plugin at `pluginPath`. */
export function describePluginConformance(pluginPath: string, options: PluginConformanceOptions = {}): void {
  const { runner: given, strict, isolation = "worker", ...checkOptions } = options;
  const runner = given ?? globalRunner();
  runner.describe(`plugin conformance: ${pluginPath}`, () => {
    let findings: PluginFinding[] = [];
    runner.before(async function (this: { timeout?: (ms: number) => void } | undefined) {
      // Under mocha: the whole check has its own deadline; the hook waits for it.
      this?.timeout?.((checkOptions.checkDeadlineMs ?? 60_000) + 10_000);
      findings =
        isolation === "none"
          ? await checkPlugin(pluginPath, checkOptions as CheckPluginOptions)
          : await checkPluginIsolated(pluginPath, checkOptions);
    });
    for (const rule of conformanceRules) {
      runner.it(`${rule.name}: ${rule.holds}`, () => {
        const failing = findings.filter((f) => f.check === rule.name && (f.severity === "error" || strict === true));
        if (failing.length > 0) throw new Error(failing.map((f) => formatFinding(f)).join("\n"));
      });
    }
  });
}
