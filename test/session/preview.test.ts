// `host.preview(id)`: what the next Safe Provider-Turn Boundary would admit, observed
// now and admitted never — the next real boundary decides afresh and admits it itself.

import { expect } from "chai";
import { scriptedProvider } from "../../core/index.ts";
import { hostsPerTest, requestOf, testSource, transcript } from "./fixtures.ts";

describe("host.preview: the next boundary, without admitting it", () => {
  const { startSession, extraFolder } = hostsPerTest();

  it("before the first boundary it is the initial Baseline; a step still starts epoch 1 with it", async () => {
    const branch = testSource("core/branch", "main");
    const { host, id } = await startSession(scriptedProvider(), { core: [branch.core] });
    const preview = await host.preview(id);
    expect(preview).to.deep.equal({
      kind: "new-epoch",
      reason: "initial",
      baseline: "core/branch is main",
      snapshot: { "core/branch": { value: "main", removed: "core/branch (main) no longer applies" } },
    });
    expect(await host.epoch(id)).to.equal(undefined);
    await host.prompt(id, "one");
    const first = requestOf(await host.step(id));
    expect(first.system.at(-1)).to.equal("core/branch is main");
    expect((await host.epoch(id))?.number).to.equal(1);
  });

  it("a change is previewed as its Mid-Conversation System Message, and admitted only by the next step", async () => {
    const branch = testSource("core/branch", "main");
    const { host, id } = await startSession(scriptedProvider(), { core: [branch.core] });
    await host.prompt(id, "one");
    await host.step(id);
    expect(await host.preview(id)).to.deep.include({ kind: "unchanged" });

    branch.state.value = "feature";
    const before = await host.messages(id);
    const epochBefore = await host.epoch(id);
    const preview = await host.preview(id);
    expect(preview).to.deep.include({ kind: "update", text: "core/branch is now feature" });
    // Twice: nothing was admitted by the first look.
    expect(await host.preview(id)).to.deep.equal(preview);
    expect(await host.messages(id)).to.deep.equal(before);
    expect(await host.epoch(id)).to.deep.equal(epochBefore);

    await host.prompt(id, "two");
    const second = requestOf(await host.step(id));
    expect(transcript(second.messages).slice(-1)).to.deep.equal(["system-update: core/branch is now feature"]);
    expect(await host.preview(id)).to.deep.include({ kind: "unchanged" });
  });

  it("after a move or a switch it is the new epoch's Baseline, with its reason", async () => {
    const branch = testSource("core/branch", "main");
    const { host, id } = await startSession(scriptedProvider(), { core: [branch.core] });
    await host.prompt(id, "one");
    await host.step(id);
    await host.move(id, extraFolder("elsewhere"));
    expect(await host.preview(id)).to.deep.include({ kind: "new-epoch", reason: "move", baseline: "core/branch is main" });
    await host.switchModel(id, { model: "m2" });
    expect(await host.preview(id)).to.deep.include({ kind: "new-epoch", reason: "switch" });
    expect((await host.epoch(id))?.number).to.equal(1);
  });
});
