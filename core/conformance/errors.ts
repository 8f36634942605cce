// Owns the named error of the conformance kit (decision 011): a suite declared where it
// cannot run, or given a fixture it cannot use.

import { ContextHostError } from "../base/errors.ts";

/**
 * A conformance suite cannot be set up as it was called: no test runner (no mocha globals
 * and no `runner` option), or a fixture missing what a rule needs. Names the suite and what
 * to give it.
 */
export class ConformanceSetupInvalid extends ContextHostError {
  /** The suite: `describeStoreConformance`, `describePluginConformance`. */
  readonly suite: string;
  readonly reason: string;
  constructor(options: { readonly suite: string; readonly reason: string }) {
    super(`${options.suite}: ${options.reason}`);
    this.suite = options.suite;
    this.reason = options.reason;
  }
}
