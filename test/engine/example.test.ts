// examples/ai-sdk-agent runs as its README says (`npm start`: tsx agent.ts, from the sources) with no key:
// a scripted local server answers, and the agent's model sees the Baseline the engine
// rendered. It runs in a temp project whose node_modules are this project's, with
// `context-host` resolving to this project's sources.

import { expect } from "chai";
import { type ExampleProject, exampleProject } from "../support/example-project.ts";

describe("examples/ai-sdk-agent", function () {
  this.timeout(60_000);
  let example: ExampleProject;
  before(() => {
    example = exampleProject("ai-sdk-agent", "agent.ts", ["plugins"]);
  });
  after(() => example.remove());

  it("type-checks as a consumer's TypeScript would (strict, NodeNext)", async () => {
    expect(await example.typeCheck()).to.equal("");
  });

  it("npm start without a key: a tool step, then a reply that shows what the engine put in the system prompt", async () => {
    const env = { ...process.env };
    delete env.ANTHROPIC_API_KEY;
    const stdout = await example.start(env);
    expect(stdout).to.match(/^\(scripted\) I was told: You are a coding agent\. Be brief\. \| /);
    // The Baseline: the built-in sources' text (the date, the environment) follows the caller's system prompt.
    expect(stdout).to.match(/\| [^|]*\S/);
  });
});
