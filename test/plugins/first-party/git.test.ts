// The first-party `git` plugin, loaded by the real PluginSet from plugins/, observing
// real temp repositories made with the real git program.

import { chmodSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { expect } from "chai";
import { parseStatus } from "../../../plugins/git/status.ts";
import { git, initialize, type LoadedPlugin, loadPlugin, reconcile, tempFolder } from "./harness.ts";

const key = "git/status";

/** A repository on `main` with one commit of `a.txt`, committed as a local test identity. */
function makeRepo(folder: string): string {
  git(folder, "init", "-q", "-b", "main");
  git(folder, "config", "user.name", "Test User");
  git(folder, "config", "user.email", "test@example.com");
  git(folder, "config", "commit.gpgsign", "false");
  writeFileSync(path.join(folder, "a.txt"), "one\n");
  git(folder, "add", "a.txt");
  git(folder, "commit", "-q", "-m", "first");
  return shortHead(folder);
}

function shortHead(folder: string): string {
  return git(folder, "rev-parse", "--short=7", "HEAD").trim();
}

function commit(folder: string, file: string, text: string, message: string): string {
  writeFileSync(path.join(folder, file), text);
  git(folder, "add", file);
  git(folder, "commit", "-q", "-m", message);
  return shortHead(folder);
}

/** Writes an executable shell script standing in for git. */
function fakeGit(folder: string, name: string, body: string): string {
  const file = path.join(folder, name);
  writeFileSync(file, `#!/bin/sh\n${body}\n`);
  chmodSync(file, 0o755);
  return file;
}

describe("plugin git", () => {
  if (process.platform === "win32") return;

  let plugin: LoadedPlugin;
  let temp: ReturnType<typeof tempFolder>;
  let repo: string;

  before(async () => {
    plugin = await loadPlugin("git");
  });
  after(async () => {
    await plugin?.close();
  });
  beforeEach(() => {
    temp = tempFolder("git");
    repo = path.join(temp.path, "repo");
    mkdirSync(repo);
  });
  afterEach(() => temp.remove());

  it("loads from plugins/ with its one source git/status and no diagnostics", () => {
    const info = plugin.host.plugins().find((p) => p.name === "git");
    expect(info?.keys).to.deep.equal([key]);
    expect(plugin.host.diagnostics).to.deep.equal([]);
  });

  it("renders a concise baseline: branch, short HEAD and changed files", async () => {
    const head = makeRepo(repo);
    const generation = await initialize(await plugin.compose(repo));
    expect(generation.baseline).to.equal(`Git: on branch main at ${head}, no changed files.`);
    expect(generation.snapshot[key]).to.deep.equal({
      value: { branch: "main", head, changed: 0 },
      removed: "The working folder is no longer a git repository.",
    });
  });

  it("works from a subfolder of the repository", async () => {
    const head = makeRepo(repo);
    const sub = path.join(repo, "src", "deep");
    mkdirSync(sub, { recursive: true });
    const generation = await initialize(await plugin.compose(sub));
    expect(generation.baseline).to.equal(`Git: on branch main at ${head}, no changed files.`);
  });

  it("counts modified, staged, untracked and renamed files, and updates with the newly effective state", async () => {
    const head = makeRepo(repo);
    commit(repo, "b.txt", "b\n", "second");
    const head2 = shortHead(repo);
    expect(head2).to.not.equal(head);
    const generation = await initialize(await plugin.compose(repo));

    writeFileSync(path.join(repo, "a.txt"), "changed\n"); // modified
    writeFileSync(path.join(repo, "new.txt"), "new\n");
    git(repo, "add", "new.txt"); // staged new file
    writeFileSync(path.join(repo, "untracked.txt"), "u\n"); // untracked
    git(repo, "mv", "b.txt", "c.txt"); // rename: one changed path
    const result = await reconcile(await plugin.compose(repo), generation.snapshot);
    expect(result.kind).to.equal("updated");
    if (result.kind !== "updated") return;
    expect(result.text).to.equal(`Git status is now: on branch main at ${head2}, 4 changed files.`);
    expect(result.snapshot[key]?.value).to.deep.equal({ branch: "main", head: head2, changed: 4 });

    // Same state again: nothing to say.
    expect(await reconcile(await plugin.compose(repo), result.snapshot)).to.deep.equal({ kind: "unchanged" });

    writeFileSync(path.join(repo, "a.txt"), "one\n");
    const one = await reconcile(await plugin.compose(repo), result.snapshot);
    expect(one.kind === "updated" && one.text).to.equal(`Git status is now: on branch main at ${head2}, 3 changed files.`);
  });

  it("says '1 changed file' for exactly one", async () => {
    const head = makeRepo(repo);
    writeFileSync(path.join(repo, "a.txt"), "changed\n");
    const generation = await initialize(await plugin.compose(repo));
    expect(generation.baseline).to.equal(`Git: on branch main at ${head}, 1 changed file.`);
  });

  it("a branch switch and a new commit produce one update naming the new branch and HEAD, never a diff", async () => {
    makeRepo(repo);
    const generation = await initialize(await plugin.compose(repo));
    git(repo, "switch", "-q", "-c", "feature/x");
    const head = commit(repo, "f.txt", "f\n", "feature");
    const result = await reconcile(await plugin.compose(repo), generation.snapshot);
    expect(result).to.deep.include({
      kind: "updated",
      text: `Git status is now: on branch feature/x at ${head}, no changed files.`,
    });
    if (result.kind === "updated") expect(result.text).to.not.match(/main/);
  });

  it("handles a detached HEAD: branch null", async () => {
    makeRepo(repo);
    const second = commit(repo, "b.txt", "b\n", "second");
    const generation = await initialize(await plugin.compose(repo));
    git(repo, "checkout", "-q", "--detach", "HEAD~1");
    const head = shortHead(repo);
    expect(head).to.not.equal(second);
    const result = await reconcile(await plugin.compose(repo), generation.snapshot);
    expect(result.kind).to.equal("updated");
    if (result.kind !== "updated") return;
    expect(result.text).to.equal(`Git status is now: detached HEAD at ${head}, no changed files.`);
    expect(result.snapshot[key]?.value).to.deep.equal({ branch: null, head, changed: 0 });
  });

  it("handles a repository without commits: head null", async () => {
    git(repo, "init", "-q", "-b", "trunk");
    writeFileSync(path.join(repo, "x.txt"), "x\n");
    const generation = await initialize(await plugin.compose(repo));
    expect(generation.baseline).to.equal("Git: on branch trunk (no commits yet), 1 changed file.");
    expect(generation.snapshot[key]?.value).to.deep.equal({ branch: "trunk", head: null, changed: 1 });
  });

  it("is absent outside a repository: nothing rendered, nothing logged", async () => {
    const generation = await initialize(await plugin.compose(repo));
    expect(generation).to.deep.equal({ baseline: "", snapshot: {} });
    expect(plugin.logged.filter((line) => line.includes("git/status"))).to.deep.equal([]);
  });

  it("is absent when the working folder does not exist", async () => {
    const generation = await initialize(await plugin.compose(path.join(temp.path, "missing")));
    expect(generation).to.deep.equal({ baseline: "", snapshot: {} });
  });

  it("emits the removal text once the folder stops being a repository, and the baseline when it is one again", async () => {
    makeRepo(repo);
    const generation = await initialize(await plugin.compose(repo));
    rmSync(path.join(repo, ".git"), { recursive: true, force: true });
    const removed = await reconcile(await plugin.compose(repo), generation.snapshot);
    expect(removed).to.deep.equal({
      kind: "updated",
      text: "The working folder is no longer a git repository.",
      snapshot: {},
      change: { written: [], removed: ["git/status"] },
    });
    if (removed.kind !== "updated") return;
    expect(await reconcile(await plugin.compose(repo), removed.snapshot)).to.deep.equal({ kind: "unchanged" });

    const head = makeRepo(repo);
    const back = await reconcile(await plugin.compose(repo), removed.snapshot);
    expect(back.kind === "updated" && back.text).to.equal(`Git: on branch main at ${head}, no changed files.`);
  });

  it("still observes while another git command holds index.lock (status takes no optional locks)", async () => {
    const head = makeRepo(repo);
    writeFileSync(path.join(repo, "a.txt"), "changed\n");
    writeFileSync(path.join(repo, ".git", "index.lock"), "");
    const generation = await initialize(await plugin.compose(repo));
    expect(generation.baseline).to.equal(`Git: on branch main at ${head}, 1 changed file.`);
  });

  describe("when git fails", () => {
    let failing: LoadedPlugin | undefined;
    afterEach(async () => {
      await failing?.close();
      failing = undefined;
    });

    it("a missing git program makes the source unavailable (left out, no fault diagnostic), logged once", async () => {
      makeRepo(repo);
      failing = await loadPlugin("git", { git: { gitPath: path.join(temp.path, "no-such-git") } });
      const generation = await initialize(await failing.compose(repo));
      expect(generation).to.deep.equal({ baseline: "", snapshot: {} });
      await initialize(await failing.compose(repo));
      expect(failing.host.diagnostics).to.deep.equal([]);
      const warnings = failing.logged.filter((line) => line.startsWith("warn: git/status is unavailable"));
      expect(warnings).to.have.length(1);
      expect(warnings[0]).to.include("git program not found");
    });

    it("a git that fails for another reason (exit 128 without 'not a git repository') is unavailable, not absent", async () => {
      makeRepo(repo);
      const gitPath = fakeGit(
        temp.path,
        "git-locked",
        `echo "fatal: Unable to create '.git/index.lock': File exists." >&2\nexit 128`,
      );
      failing = await loadPlugin("git", { git: { gitPath } });
      expect(await initialize(await failing.compose(repo))).to.deep.equal({ baseline: "", snapshot: {} });
      expect(failing.logged.join("\n")).to.include("index.lock");
    });

    it("a git that hangs is killed at its timeout and the source is unavailable, within the host's deadline", async () => {
      makeRepo(repo);
      const gitPath = fakeGit(temp.path, "git-hangs", "exec sleep 30");
      failing = await loadPlugin("git", { git: { gitPath, timeoutMs: 150 } });
      expect(await initialize(await failing.compose(repo))).to.deep.equal({ baseline: "", snapshot: {} });
      // Which deadline fired: the plugin's own timeout, not the host's (no host diagnostic).
      expect(failing.host.diagnostics).to.deep.equal([]);
      expect(failing.logged.join("\n")).to.include("did not finish within 150 ms");
    });

    it("output git would never print is unavailable, not a wrong value", async () => {
      makeRepo(repo);
      const gitPath = fakeGit(temp.path, "git-odd", "printf 'hello world'");
      failing = await loadPlugin("git", { git: { gitPath } });
      expect(await initialize(await failing.compose(repo))).to.deep.equal({ baseline: "", snapshot: {} });
    });

    it("a transient failure keeps the admitted state (no update); recovery emits the newly effective state", async () => {
      const head = makeRepo(repo);
      const marker = path.join(temp.path, "fail-now");
      const gitPath = fakeGit(
        temp.path,
        "git-flaky",
        `if [ -e '${marker}' ]; then echo 'fatal: cannot lock ref' >&2; exit 128; fi\nexec git "$@"`,
      );
      failing = await loadPlugin("git", { git: { gitPath } });
      const generation = await initialize(await failing.compose(repo));
      expect(generation.baseline).to.equal(`Git: on branch main at ${head}, no changed files.`);

      writeFileSync(marker, "");
      writeFileSync(path.join(repo, "a.txt"), "changed\n");
      expect(await reconcile(await failing.compose(repo), generation.snapshot)).to.deep.equal({ kind: "unchanged" });

      rmSync(marker);
      const recovered = await reconcile(await failing.compose(repo), generation.snapshot);
      expect(recovered.kind === "updated" && recovered.text).to.equal(
        `Git status is now: on branch main at ${head}, 1 changed file.`,
      );
    });

    it("a config that fails the plugin's schema is rejected with a config diagnostic", async () => {
      let error: unknown;
      try {
        failing = await loadPlugin("git", { git: { gitPath: "" } });
      } catch (e) {
        error = e;
      }
      expect(String(error)).to.match(/git config: config rejected/);
    });
  });
});

describe("git status parsing", () => {
  const oid = "0123456789abcdef0123456789abcdef01234567";
  const out = (...fields: string[]) => `${fields.join("\0")}\0`;

  it("reads branch, short HEAD and counts every kind of entry once (a rename's original path is not an entry)", () => {
    const text = out(
      `# branch.oid ${oid}`,
      "# branch.head main",
      "# branch.upstream origin/main",
      "# branch.ab +1 -0",
      "1 .M N... 100644 100644 100644 aaa aaa a.txt",
      "2 R. N... 100644 100644 100644 bbb bbb R100 new name.txt",
      "1 M. N... 100644 100644 100644 ccc ccc 1 .M fake-entry-in-old-path",
      "u UU N... 100644 100644 100644 100644 d e f conflict.txt",
      "? untracked dir/",
      "! ignored.txt",
    );
    expect(parseStatus(text)).to.deep.equal({ branch: "main", head: "0123456", changed: 4 });
  });

  it("detached and initial", () => {
    expect(parseStatus(out(`# branch.oid ${oid}`, "# branch.head (detached)"))).to.deep.equal({
      branch: null,
      head: "0123456",
      changed: 0,
    });
    expect(parseStatus(out("# branch.oid (initial)", "# branch.head main", "? x"))).to.deep.equal({
      branch: "main",
      head: null,
      changed: 1,
    });
  });

  it("rejects output without the branch headers or with unknown entries", () => {
    expect(parseStatus("")).to.equal(undefined);
    expect(parseStatus(out("# branch.head main"))).to.equal(undefined);
    expect(parseStatus(out(`# branch.oid ${oid}`, "# branch.head main", "garbage"))).to.equal(undefined);
  });
});
