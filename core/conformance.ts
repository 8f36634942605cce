/**
 * context-host/conformance: the conformance kit — the rules of `context-host check` as a
 * function and as test cases, the registry rules as a suite any registry can run (with the
 * types a registry implements), and the session store contract as a suite any
 * `SessionStore` can run.
 *
 * @module
 */

export { type Disposer, Scope } from "./base/scope.ts";
export { checkPluginIsolated, checkPluginsIsolated, type IsolatedCheckOptions } from "./conformance/check-isolated.ts";
export {
  type CheckPluginOptions,
  checkPlugin,
  formatFinding,
  type PluginCheckName,
  type PluginFinding,
} from "./conformance/check-plugin.ts";
export { ConformanceSetupInvalid } from "./conformance/errors.ts";
export { describePluginConformance, type PluginConformanceOptions, type TestRunner } from "./conformance/plugin-suite.ts";
export { describeRegistryConformance, type RegistryUnderTest } from "./conformance/registry-suite.ts";
export {
  type CheckName,
  type ConformanceRule,
  checkNames,
  conformanceRules,
  type PluginPhase,
} from "./conformance/rules.ts";
export { type CheckedSource, checkSource, type Finding, type SourceCheckOptions } from "./conformance/source-checks.ts";
export {
  describeStoreConformance,
  type SessionStoreFixture,
  type StoreConformanceOptions,
} from "./conformance/store-suite.ts";
export type { Batch, Registration, RegistryState, SourceEnv } from "./registry/registry.ts";
