// The `core/environment` Context Source through a real host: working directory, project
// root (nearest `.git` at or above the location), whether it is a git repository, and
// the platform. It is location-scoped: a moved session re-resolves it in its new epoch.

import path from "node:path";
import { expect } from "chai";
import { type Host, scriptedProvider } from "../../core/index.ts";
import { projectRootOf } from "../../core/sources/project-root.ts";
import {
  baselineOf,
  markProjectRoot,
  openHost,
  requestOf,
  systemUpdates,
  tempFolder,
  writeTree,
} from "../instructions/harness.ts";

function environmentBlock(env: { workingDirectory: string; projectRoot: string; isGit: boolean }): string {
  return [
    "<environment>",
    `Working directory: ${env.workingDirectory}`,
    `Project root: ${env.projectRoot}`,
    `Is a git repository: ${env.isGit ? "yes" : "no"}`,
    `Platform: ${process.platform}`,
    "</environment>",
  ].join("\n");
}

describe("built-in source core/environment", () => {
  let data: ReturnType<typeof tempFolder>;
  let tree: ReturnType<typeof tempFolder>;
  const hosts: Host[] = [];

  beforeEach(() => {
    data = tempFolder("env-data");
    tree = tempFolder("env-tree");
  });

  afterEach(async () => {
    for (const host of hosts.splice(0)) await host.close();
    data.remove();
    tree.remove();
  });

  async function start(location: string) {
    const provider = scriptedProvider();
    const host = await openHost(data.path, { providers: { scripted: provider } });
    hosts.push(host);
    const id = await host.createSession({ location, provider: "scripted", model: "m" });
    return { host, id, provider };
  }

  it("renders the working directory, the nearest .git ancestor as project root, git-ness and the platform", async () => {
    const root = path.join(tree.path, "repo");
    markProjectRoot(root);
    writeTree(root, { "src/lib/index.ts": "export {};\n" });
    const location = path.join(root, "src", "lib");
    const { host, id } = await start(location);
    await host.prompt(id, "hello");
    const baseline = baselineOf(requestOf(await host.step(id)));
    expect(baseline).to.contain(environmentBlock({ workingDirectory: location, projectRoot: root, isGit: true }));
    // core/date, then core/environment: the built-ins keep the host's order.
    expect(baseline.indexOf("Today's date is")).to.be.lessThan(baseline.indexOf("<environment>"));
  });

  it("outside a git repository the project root is the location itself", async () => {
    const location = path.join(tree.path, "plain", "folder");
    writeTree(location, { "notes.txt": "x" });
    expect(projectRootOf(location)).to.deep.equal({ root: location, isGitRepository: false });
    const { host, id } = await start(location);
    await host.prompt(id, "hello");
    expect(baselineOf(requestOf(await host.step(id)))).to.contain(
      environmentBlock({ workingDirectory: location, projectRoot: location, isGit: false }),
    );
  });

  it("a .git file (a worktree or submodule) marks a project root too", () => {
    const root = path.join(tree.path, "worktree");
    writeTree(root, { ".git": "gitdir: /elsewhere\n", "a/b.txt": "x" });
    expect(projectRootOf(path.join(root, "a"))).to.deep.equal({ root, isGitRepository: true });
  });

  it("a moved session re-resolves its environment: the new epoch's Baseline shows the new working directory and project root", async () => {
    const first = path.join(tree.path, "first");
    const second = path.join(tree.path, "second");
    markProjectRoot(first);
    writeTree(second, { "pkg/readme.txt": "x" });
    const { host, id } = await start(first);
    await host.prompt(id, "one");
    const before = requestOf(await host.step(id));
    expect(baselineOf(before)).to.contain(environmentBlock({ workingDirectory: first, projectRoot: first, isGit: true }));

    const destination = path.join(second, "pkg");
    await host.move(id, destination);
    await host.prompt(id, "two");
    const after = requestOf(await host.step(id));
    expect(baselineOf(after)).to.contain(
      environmentBlock({ workingDirectory: destination, projectRoot: destination, isGit: false }),
    );
    expect(baselineOf(after)).to.not.contain(first);
    // A new epoch, not an update appended to the old one.
    expect(after.messages.map((m) => m.role)).to.not.include("system-update");
    expect(await systemUpdates(host, id)).to.deep.equal([]);
  });
});
