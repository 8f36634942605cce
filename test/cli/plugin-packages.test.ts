// The command line with plugin packages (decisions 130, 131): `context-host plugins` lists
// what the host would load and where from, `render` and the settings file take package
// names, `check` takes an installed package's name, and a name that is neither a path nor
// an installed package is bad usage naming it.

import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { expect } from "chai";
import { main, packageVersion } from "../../scripts/cli/main.ts";
import { textPlugin } from "../plugins/harness.ts";
import { installPackage } from "../support/plugin-packages.ts";

async function cli(args: string[], cwd: string) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(args, { cwd, out: (t) => out.push(t), err: (t) => err.push(t) });
  return { code, stdout: out.join("\n"), stderr: err.join("\n") };
}

const tides = (peer: string) => ({
  name: "context-host-plugin-tides",
  version: "1.3.0",
  peer,
  declared: ["plugins/tides.ts"],
  files: { "plugins/tides.ts": textPlugin({ name: "tides", value: "high water at noon" }) },
});

describe("context-host command line: plugin packages", function () {
  this.timeout(60_000);
  let project: string;
  const hostVersion = packageVersion();
  beforeEach(() => {
    project = realpathSync(mkdtempSync(path.join(os.tmpdir(), "cli-packages-")));
    mkdirSync(path.join(project, "plugins"));
    writeFileSync(path.join(project, "plugins", "notes.ts"), textPlugin({ name: "notes", value: "kept" }));
  });
  afterEach(() => rmSync(project, { recursive: true, force: true }));

  it("plugins lists every plugin the host would load, with its folder or package@version, and loads none", async () => {
    installPackage(project, tides(`^${hostVersion}`));
    // Code that would throw if it ran: listing must not run it.
    writeFileSync(path.join(project, "plugins", "loud.ts"), 'throw new Error("ran");');
    const { code, stdout, stderr } = await cli(
      ["plugins", "--plugins", "plugins", "--plugins", "context-host-plugin-tides"],
      project,
    );
    expect([code, stderr]).to.deep.equal([0, ""]);
    expect(stdout.split("\n")).to.deep.equal([
      "loud   plugins                          plugins/loud.ts",
      "notes  plugins                          plugins/notes.ts",
      "tides  context-host-plugin-tides@1.3.0  node_modules/context-host-plugin-tides/plugins/tides.ts",
    ]);
    const json = await cli(["plugins", "--plugins", "context-host-plugin-tides", "--json"], project);
    const root = path.join(project, "node_modules", "context-host-plugin-tides");
    expect(JSON.parse(json.stdout)).to.deep.equal({
      plugins: [
        {
          id: "tides",
          file: path.join(root, "plugins", "tides.ts"),
          origin: { kind: "package", name: "context-host-plugin-tides", version: "1.3.0", root },
        },
      ],
      problems: [],
    });
  });

  it("plugins reads the settings file's plugins, and says on stderr, with exit 2, why a package's plugins would not load", async () => {
    installPackage(project, tides(">=99"));
    writeFileSync(
      path.join(project, "context-host.json"),
      JSON.stringify({ plugins: ["./plugins", "context-host-plugin-tides"] }),
    );
    const { code, stdout, stderr } = await cli(["plugins"], project);
    expect(code).to.equal(2);
    expect(stdout).to.equal("notes  plugins  plugins/notes.ts");
    expect(stderr).to.equal(
      `node_modules/context-host-plugin-tides/package.json [context-host-plugin-tides package] context-host-plugin-tides@1.3.0: needs context-host >=99 (peerDependencies), but this host is context-host ${hostVersion}; its plugins are not loaded`,
    );
  });

  it("render loads a package named by --plugins, or in the settings file, into the Baseline", async () => {
    installPackage(project, tides(`^${hostVersion}`));
    const named = await cli(["render", "--plugins", "context-host-plugin-tides", "--location", project], project);
    expect([named.code, named.stderr]).to.deep.equal([0, ""]);
    expect(named.stdout).to.contain("tides: high water at noon").and.not.contain("notes: kept");
    // The package resolves from the working folder, wherever the session's location is.
    const elsewhere = realpathSync(mkdtempSync(path.join(os.tmpdir(), "cli-location-")));
    try {
      const located = await cli(["render", "--plugins", "context-host-plugin-tides", "--location", elsewhere], project);
      expect([located.code, located.stderr]).to.deep.equal([0, ""]);
      expect(located.stdout).to.contain("tides: high water at noon");
    } finally {
      rmSync(elsewhere, { recursive: true, force: true });
    }
    writeFileSync(path.join(project, "context-host.json"), JSON.stringify({ plugins: ["context-host-plugin-tides", "plugins"] }));
    const fromSettings = await cli(["render", "--location", project], project);
    expect([fromSettings.code, fromSettings.stderr]).to.deep.equal([0, ""]);
    expect(fromSettings.stdout).to.contain("tides: high water at noon").and.contain("notes: kept");
  });

  it("render refuses an incompatible package with its diagnostic, exit 2, and renders the rest", async () => {
    installPackage(project, tides("^0.0.1-never"));
    const { code, stdout, stderr } = await cli(
      ["render", "--plugins", "plugins", "--plugins", "context-host-plugin-tides", "--location", project],
      project,
    );
    expect(code).to.equal(2);
    expect(stdout).to.contain("notes: kept").and.not.contain("tides:");
    expect(stderr).to.contain(`needs context-host ^0.0.1-never (peerDependencies), but this host is context-host ${hostVersion}`);
  });

  it("a name that is neither a path nor an installed package is bad usage naming it, wherever it is given", async () => {
    for (const command of ["render", "dev", "plugins"]) {
      const { code, stderr } = await cli([command, "--plugins", "context-host-plugin-gone"], project);
      expect(code, command).to.equal(64);
      expect(stderr).to.contain(
        `--plugins context-host-plugin-gone: no such folder or file (${path.join(project, "context-host-plugin-gone")}), and no installed package context-host-plugin-gone (npm i context-host-plugin-gone)`,
      );
    }
    const check = await cli(["check", "context-host-plugin-gone"], project);
    expect(check.code).to.equal(64);
    expect(check.stderr).to.contain("no installed package context-host-plugin-gone");
  });

  it("check takes an installed package's name and checks the plugins it declares; an incompatible one fails naming range and version", async () => {
    installPackage(project, tides(`^${hostVersion}`));
    const passed = await cli(["check", "context-host-plugin-tides"], project);
    expect(passed.code, passed.stdout + passed.stderr).to.equal(0);
    expect(passed.stderr).to.contain("1 plugin(s) checked: 0 error(s)");
    installPackage(project, tides(">=99"));
    const refused = await cli(["check", "context-host-plugin-tides"], project);
    expect(refused.code).to.equal(1);
    expect(refused.stderr).to.contain(
      `context-host check: context-host-plugin-tides@1.3.0: needs context-host >=99 (peerDependencies), but this host is context-host ${hostVersion}`,
    );
  });
});
