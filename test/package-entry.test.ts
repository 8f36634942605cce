// The package entry: `import … from "context-host"` resolves (by the package's own name)
// to core/index.ts and exports SystemContext, definePlugin, createHost and the rest.

import { expect } from "chai";
import * as byName from "context-host";
import * as byPath from "../core/index.ts";

describe("package entry", () => {
  it("resolves by the package name to the same module as core/index.ts", () => {
    expect(byName.SystemContext).to.equal(byPath.SystemContext);
    expect(byName.definePlugin).to.equal(byPath.definePlugin);
    expect(byName.createHost).to.equal(byPath.createHost);
  });

  it("exports the SPEC section 2 names in the SystemContext namespace", () => {
    const names = ["make", "combine", "empty", "initialize", "reconcile", "replace", "unavailable", "absent", "isKey"];
    for (const name of names) expect(byName.SystemContext, name).to.have.property(name);
    expect(byName.SystemContext.DuplicateKeyError).to.be.a("function");
    expect(byName.SystemContext.InitializationBlocked).to.be.a("function");
    expect(byName.SystemContext.parseSnapshot).to.be.a("function");
  });
});
