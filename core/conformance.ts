/**
 * context-host/conformance: the conformance kit — the checks of `context-host check` as a
 * function and as test cases, the registry rules as a suite any registry can run, and the
 * session store contract as a suite any `SessionStore` can run.
 *
 * @module
 */

export { checkPluginIsolated, type IsolatedCheckOptions } from "./conformance/check-isolated.ts";
export {
  type CheckName,
  type CheckPluginOptions,
  checkPlugin,
  formatFinding,
  type PluginCheckName,
  type PluginFinding,
} from "./conformance/check-plugin.ts";
export { ConformanceSetupInvalid } from "./conformance/errors.ts";
export { checkNames, describePluginConformance, type TestRunner } from "./conformance/plugin-suite.ts";
export { describeRegistryConformance, type RegistryUnderTest } from "./conformance/registry-suite.ts";
export { type CheckedSource, checkSource, type Finding, type SourceCheckOptions } from "./conformance/source-checks.ts";
export {
  describeStoreConformance,
  type SessionStoreFixture,
  type StoreConformanceOptions,
} from "./conformance/store-suite.ts";
