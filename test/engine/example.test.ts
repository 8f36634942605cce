// examples/ai-sdk-agent runs as its README says (`npm start`: tsx agent.ts) with no key:
// a scripted local server answers, and the agent's model sees the Baseline the engine
// rendered. It runs in a temp project whose node_modules are this project's, with
// `context-host` resolving to this project's sources.

import { execFile } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { expect } from "chai";

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, "../..");

describe("examples/ai-sdk-agent", function () {
  this.timeout(60_000);
  let project = "";
  before(() => {
    project = mkdtempSync(path.join(os.tmpdir(), "ai-sdk-example-"));
    const modules = path.join(project, "node_modules");
    mkdirSync(modules);
    for (const name of readdirSync(path.join(root, "node_modules"))) {
      if (!name.startsWith(".")) symlinkSync(path.join(root, "node_modules", name), path.join(modules, name));
    }
    symlinkSync(root, path.join(modules, "context-host"));
    cpSync(path.join(root, "examples/ai-sdk-agent"), path.join(project, "ai-sdk-agent"), {
      recursive: true,
      filter: (source) => !source.includes(".context-host") && !source.includes("node_modules"),
    });
    cpSync(path.join(root, "examples/plugins"), path.join(project, "plugins"), { recursive: true });
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
        files: ["ai-sdk-agent/agent.ts"],
      }),
    );
    writeFileSync(path.join(project, "package.json"), JSON.stringify({ type: "module", private: true }));
  });

  it("type-checks as a consumer's TypeScript would (strict, NodeNext)", async () => {
    const tsc = path.join(root, "node_modules/typescript/bin/tsc");
    const outcome = await run(process.execPath, [tsc, "-p", ".", "--singleThreaded"], { cwd: project }).catch(
      (error: { stdout?: string }) => ({ stdout: error.stdout ?? String(error) }),
    );
    expect(outcome.stdout).to.equal("");
  });
  after(() => rmSync(project, { recursive: true, force: true }));

  it("npm start without a key: a tool step, then a reply that shows what the engine put in the system prompt", async () => {
    const env = { ...process.env };
    delete env.ANTHROPIC_API_KEY;
    const { stdout } = await run(process.execPath, ["--conditions=context-host-source", "--import", "tsx", "agent.ts"], {
      cwd: path.join(project, "ai-sdk-agent"),
      env,
    });
    expect(stdout).to.match(/^\(scripted\) I was told: You are a coding agent\. Be brief\. \| /);
    // The Baseline: the built-in sources' text (the date, the environment) follows the caller's system prompt.
    expect(stdout).to.match(/\| [^|]*\S/);
  });
});
