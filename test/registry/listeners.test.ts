// The one listener fan-out (core/base/listeners.ts): every listener hears each event in the
// order it subscribed; one that throws does not keep the others from hearing it.

import { expect } from "chai";
import { Listeners } from "../../core/base/listeners.ts";

describe("Listeners", () => {
  it("a throwing listener is its own fault: the others still hear the event, in order", () => {
    const listeners = new Listeners<number>();
    const heard: string[] = [];
    listeners.add((n) => heard.push(`a${n}`));
    listeners.add(() => {
      throw new Error("boom");
    });
    const unsubscribe = listeners.add((n) => heard.push(`c${n}`));
    listeners.emit(1);
    unsubscribe();
    unsubscribe();
    listeners.emit(2);
    expect(heard).to.deep.equal(["a1", "c1", "a2"]);
    expect(listeners.isEmpty).to.equal(false);
    listeners.clear();
    expect(listeners.isEmpty).to.equal(true);
  });
});
