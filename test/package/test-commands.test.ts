// The test commands: a file named to mocha runs alone (`npx mocha test/x.test.ts`), while
// `npm run test:unit`, `npm run test:long` and `npm run coverage` name every test file
// themselves (`npm test`'s scripts/test.mjs lists them). So .mocharc.json holds options only:
// mocha adds the files named on its command line to a config's `spec` instead of replacing it.

import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { expect } from "chai";

const root = path.resolve(import.meta.dirname, "../..");
const mocha = path.join(root, "node_modules/mocha/bin/mocha.js");

describe("the test commands", function () {
  this.timeout(60_000);

  it("a test file named to mocha runs alone, with the options of .mocharc.json", async () => {
    const named = "test/cli/screen.test.ts";
    const { stdout } = await promisify(execFile)(process.execPath, [mocha, "--dry-run", "--reporter", "json", named], {
      cwd: root,
      maxBuffer: 64 * 1024 * 1024,
    });
    const report = JSON.parse(stdout) as { tests: Array<{ file: string }> };
    expect(report.tests).to.not.be.empty;
    expect([...new Set(report.tests.map((test) => path.relative(root, test.file)))]).to.deep.equal([named]);
  });

  it(".mocharc.json names no files; the scripts that run every test name them", () => {
    const config = JSON.parse(readFileSync(path.join(root, ".mocharc.json"), "utf8")) as Record<string, unknown>;
    expect(config).to.not.have.property("spec");
    const { scripts } = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")) as {
      scripts: Record<string, string>;
    };
    for (const script of ["test:unit", "test:long", "coverage"])
      expect(scripts[script], script).to.match(/\bmocha .*"test\/\*\*\/\*\.test\.ts"$/);
  });
});
