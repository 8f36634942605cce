// Runs a published conformance suite outside mocha: a TestRunner that collects the suite's
// cases (and its `before` hooks), then runs them and tells which failed. The tests that show
// a suite failing a broken implementation on exactly the rule it breaks use it.

import type { TestRunner } from "../../core/conformance/plugin-suite.ts";

export interface CollectedSuite {
  readonly runner: TestRunner;
  /** The collected cases, by title. */
  readonly cases: ReadonlyMap<string, () => unknown>;
  /** Runs the hooks, then every case; the titles of those that threw, in order. */
  failed(): Promise<string[]>;
}

export function collectSuite(): CollectedSuite {
  const cases = new Map<string, () => unknown>();
  const hooks: Array<() => unknown> = [];
  return {
    runner: {
      describe: (_title, body) => body(),
      it: (title, body) => cases.set(title, body),
      before: (body) => hooks.push(body),
    },
    cases,
    async failed() {
      for (const hook of hooks) await hook();
      const failed: string[] = [];
      for (const [title, body] of cases) {
        try {
          await body();
        } catch {
          failed.push(title);
        }
      }
      return failed;
    },
  };
}
