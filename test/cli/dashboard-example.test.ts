// examples/boundary-dashboard: a dashboard written outside the project from the public
// entries only shows each boundary live from `onBoundary`. It runs as its README says
// (`npm start`: tsx dashboard.ts) in a temp project whose `context-host` is this project.

import { readFileSync } from "node:fs";
import path from "node:path";
import { expect } from "chai";
import { type ExampleProject, exampleProject } from "../support/example-project.ts";

const source = path.resolve(import.meta.dirname, "../../examples/boundary-dashboard/dashboard.ts");

describe("examples/boundary-dashboard", function () {
  this.timeout(60_000);
  let example: ExampleProject;
  before(() => {
    example = exampleProject("boundary-dashboard", "dashboard.ts");
  });
  after(() => example.remove());

  it("type-checks as a consumer's TypeScript would (strict, NodeNext)", async () => {
    expect(await example.typeCheck()).to.equal("");
  });

  it("imports only context-host's public entries, typebox and Node built-ins", () => {
    const imports = [...readFileSync(source, "utf8").matchAll(/^import [^;]* from "([^"]+)";$/gm)].map(
      (match) => match[1] as string,
    );
    expect(imports.length).to.be.above(0);
    expect(imports.filter((name) => !/^(node:|context-host$|context-host\/[a-z-]+$|typebox$)/.test(name))).to.deep.equal([]);
  });

  it("npm start: a line per boundary, the epoch's Baseline first, then the update a source change admitted", async () => {
    const lines = (await example.start()).trim().split("\n");
    expect(lines).to.have.length(3);
    expect(lines[0]).to.match(
      /epoch 1 \(initial\) {2}Baseline \(\d+ chars\) · 1 message\(s\) sent .*\[\d+ ms boundary, \d+ ms provider\]$/,
    );
    expect(lines[1]).to.contain('update: "The git branch is now feature."');
    expect(lines[2]).to.contain("nothing new");
  });
});
