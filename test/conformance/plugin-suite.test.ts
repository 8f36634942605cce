// describePluginConformance on the first-party plugins (every case passes), and on a bad
// plugin through a recording runner (the failing case is the one for its fault).

import path from "node:path";
import { expect } from "chai";
import { ConformanceSetupInvalid } from "../../core/conformance/errors.ts";
import { describePluginConformance } from "../../core/conformance/plugin-suite.ts";
import { checkNames } from "../../core/conformance/rules.ts";
import { collectSuite } from "../support/suite-cases.ts";

describePluginConformance(path.resolve("plugins/git/index.ts"));
describePluginConformance(path.resolve("plugins/package-scripts/index.ts"));

describe("describePluginConformance with a runner of its own", () => {
  it("declares one case per rule and fails exactly the case of the fault", async () => {
    const suite = collectSuite();
    describePluginConformance(path.resolve("test/conformance/fixtures/bad-update.ts"), { runner: suite.runner });
    const failed = await suite.failed();
    expect([...suite.cases.keys()].map((title) => title.split(":")[0])).to.deep.equal(checkNames);
    expect(failed.map((title) => title.split(":")[0])).to.deep.equal(["update-new-state"]);
  });

  it("checks in a worker as check does: a loader that never returns fails exactly the loader-settles case", async () => {
    const suite = collectSuite();
    describePluginConformance(path.resolve("test/conformance/fixtures/defects/loader-spins.ts"), {
      runner: suite.runner,
      deadlineMs: 300,
    });
    const failed = await suite.failed();
    expect(failed.map((title) => title.split(":")[0])).to.deep.equal(["loader-settles"]);
  });

  it("without mocha's globals or a runner, declaring the suite throws ConformanceSetupInvalid", () => {
    const globals = globalThis as { before?: unknown };
    const savedBefore = globals.before;
    try {
      globals.before = undefined;
      expect(() => describePluginConformance(path.resolve("plugins/git/index.ts"))).to.throw(
        ConformanceSetupInvalid,
        /^describePluginConformance: no describe\/it\/before globals; run it under mocha or pass `runner` in the options$/,
      );
    } finally {
      globals.before = savedBefore;
    }
  });
});
