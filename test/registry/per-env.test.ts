// perEnv: one value per session env, built once, the least recently used dropped first.

import { expect } from "chai";
import { perEnv } from "../../core/registry/per-env.ts";
import type { SourceEnv } from "../../core/registry/registry.ts";

describe("registry: one value per session env", () => {
  it("builds once per env, from a frozen copy holding only location and sessionId", () => {
    const made: SourceEnv[] = [];
    const of = perEnv((env) => {
      made.push(env);
      return { env };
    });
    const a = of({ location: "/a", sessionId: "s" });
    expect(of({ location: "/a", sessionId: "s" })).to.equal(a);
    expect(of({ location: "/a" })).to.not.equal(a);
    expect(made).to.have.length(2);
    expect(Object.isFrozen(made[0])).to.equal(true);
    const extra = { location: "/b", sessionId: "t", other: 1 } as SourceEnv;
    of(extra);
    expect(made[2]).to.deep.equal({ location: "/b", sessionId: "t" });
  });

  it("keeps the most recently used envs: a hit counts as a use", () => {
    let builds = 0;
    const of = perEnv(() => ({ build: ++builds }), 2);
    const a = of({ location: "/a" });
    of({ location: "/b" });
    expect(of({ location: "/a" }), "a hit").to.equal(a);
    of({ location: "/c" }); // over the limit: /b, the least recently used, goes
    expect(of({ location: "/a" }), "still kept").to.equal(a);
    expect(builds).to.equal(3);
    of({ location: "/b" });
    expect(builds, "/b was built again").to.equal(4);
  });
});
