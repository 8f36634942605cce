// What a dev tool learns about plugins without loading any (`findPlugins`,
// `readPluginEntry`, `formatOrigin` of `context-host`): the plugins of a folder with their
// origin, and a package that is not installed as a problem that says so, not an error.

import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { expect } from "chai";
import { findPlugins, formatOrigin, readPluginEntry } from "../../core/index.ts";

describe("plugin listing: the plugins a host would load", () => {
  let project: string;
  beforeEach(() => {
    project = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "context-host-plugin-listing-")));
    fs.mkdirSync(path.join(project, "plugins"));
    // Code that would throw if it ran: listing runs none.
    fs.writeFileSync(path.join(project, "plugins", "loud.ts"), 'throw new Error("ran");');
    fs.writeFileSync(path.join(project, "plugins", "notes.ts"), "export default {};");
  });
  afterEach(() => fs.rmSync(project, { recursive: true, force: true }));

  it("lists a folder's plugins with their origin, and a package not installed as a problem with isInstalled false", () => {
    const found = findPlugins(["plugins", "context-host-plugin-absent"], { projectRoot: project });
    const folder = path.join(project, "plugins");
    expect(found.plugins).to.deep.equal([
      { id: "loud", file: path.join(folder, "loud.ts"), origin: { kind: "folder", folder } },
      { id: "notes", file: path.join(folder, "notes.ts"), origin: { kind: "folder", folder } },
    ]);
    expect(found.problems.map((p) => [p.package, p.isInstalled])).to.deep.equal([["context-host-plugin-absent", false]]);
    expect(found.problems[0]?.message).to.contain("no installed package context-host-plugin-absent");
    expect(formatOrigin({ kind: "folder", folder }, project)).to.equal("plugins");
    expect(formatOrigin({ kind: "package", name: "tides", version: "1.3.0", root: "/x" }, project)).to.equal("tides@1.3.0");
  });

  it("reads an entry as the host does: an existing folder or a written path is a path, another name a package", () => {
    expect(readPluginEntry("plugins", project)).to.deep.equal({ kind: "path", path: path.join(project, "plugins") });
    expect(readPluginEntry("./gone", project)).to.deep.equal({ kind: "path", path: path.join(project, "gone") });
    expect(readPluginEntry("@moon/tides", project)).to.deep.equal({ kind: "package", name: "@moon/tides" });
  });
});
