// The one bounded cache of what was seen lately (core/base/recent-map.ts): at most `limit`
// entries, and the one least recently used (read or written) leaves first.

import { expect } from "chai";
import { RecentMap } from "../../core/base/recent-map.ts";

describe("RecentMap", () => {
  it("keeps at most its limit, letting the least recently used go", () => {
    const map = new RecentMap<string, number>(2);
    map.set("a", 1);
    map.set("b", 2);
    expect(map.get("a")).to.equal(1); // now b is the least recently used
    map.set("c", 3);
    expect(map.size).to.equal(2);
    expect(map.get("b")).to.equal(undefined);
    expect(map.get("a")).to.equal(1);
    expect(map.get("c")).to.equal(3);
  });

  it("writing a kept key again refreshes it rather than adding one", () => {
    const map = new RecentMap<string, number>(2);
    map.set("a", 1);
    map.set("b", 2);
    map.set("a", 10);
    map.set("c", 3);
    expect(map.get("a")).to.equal(10);
    expect(map.get("b")).to.equal(undefined);
    map.delete("a");
    expect(map.size).to.equal(1);
  });
});
