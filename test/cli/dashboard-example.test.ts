// examples/boundary-dashboard: a dashboard written outside the project from the public
// entries only shows each boundary live from `onBoundary`. It runs as its README says
// (`npm start`: tsx dashboard.ts) in a temp project whose `context-host` is this project.

import { execFile } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { expect } from "chai";

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, "../..");
const example = path.join(root, "examples/boundary-dashboard");

describe("examples/boundary-dashboard", function () {
  this.timeout(60_000);
  let project = "";
  before(() => {
    project = mkdtempSync(path.join(os.tmpdir(), "dashboard-example-"));
    const modules = path.join(project, "node_modules");
    mkdirSync(modules);
    for (const name of readdirSync(path.join(root, "node_modules"))) {
      if (!name.startsWith(".")) symlinkSync(path.join(root, "node_modules", name), path.join(modules, name));
    }
    symlinkSync(root, path.join(modules, "context-host"));
    cpSync(example, path.join(project, "dashboard"), { recursive: true, filter: (source) => !source.includes("node_modules") });
    writeFileSync(path.join(project, "package.json"), JSON.stringify({ type: "module", private: true }));
    writeFileSync(
      path.join(project, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          module: "NodeNext",
          target: "ES2023",
          strict: true,
          noEmit: true,
          skipLibCheck: true,
          customConditions: ["context-host-source"],
          allowImportingTsExtensions: true,
          types: ["node"],
        },
        files: ["dashboard/dashboard.ts"],
      }),
    );
  });

  it("type-checks as a consumer's TypeScript would (strict, NodeNext)", async () => {
    const tsc = path.join(root, "node_modules/typescript/bin/tsc");
    const outcome = await run(process.execPath, [tsc, "-p", ".", "--singleThreaded"], { cwd: project }).catch(
      (error: { stdout?: string }) => ({ stdout: error.stdout ?? String(error) }),
    );
    expect(outcome.stdout).to.equal("");
  });
  after(() => rmSync(project, { recursive: true, force: true }));

  it("imports only context-host's public entries, typebox and Node built-ins", () => {
    const source = readFileSync(path.join(example, "dashboard.ts"), "utf8");
    const imports = [...source.matchAll(/^import [^;]* from "([^"]+)";$/gm)].map((match) => match[1] as string);
    expect(imports.length).to.be.above(0);
    expect(imports.filter((name) => !/^(node:|context-host$|context-host\/[a-z-]+$|typebox$)/.test(name))).to.deep.equal([]);
  });

  it("npm start: a line per boundary, the epoch's Baseline first, then the update a source change admitted", async () => {
    const { stdout } = await run(process.execPath, ["--conditions=context-host-source", "--import", "tsx", "dashboard.ts"], {
      cwd: path.join(project, "dashboard"),
    });
    const lines = stdout.trim().split("\n");
    expect(lines).to.have.length(3);
    expect(lines[0]).to.match(
      /epoch 1 \(initial\) {2}Baseline \(\d+ chars\) · 1 message\(s\) sent .*\[\d+ ms boundary, \d+ ms provider\]$/,
    );
    expect(lines[1]).to.contain('update: "The git branch is now feature."');
    expect(lines[2]).to.contain("nothing new");
  });
});
