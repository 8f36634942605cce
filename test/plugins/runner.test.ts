// The plugin runner's observation, driven directly (the transport in the host's own thread is
// only a call): it decides every source first and renders only the changed ones. An unchanged
// source costs its runner a load and a comparison and is sent as its code alone; its texts are
// the host's to hold. The plugin's renderers, codec and loader report each call to a spy logger.

import path from "node:path";
import { asValue, createContainer } from "awilix";
import { expect } from "chai";
import { bundlePlugin } from "../../core/plugins/bundle.ts";
import { type HostRequestBody, type Observed, observationCodes } from "../../core/plugins/protocol.ts";
import { createPluginRunner } from "../../core/plugins/runner.ts";
import { usePluginHarness, write } from "./harness.ts";

/** A plugin with one removable source `counted/n` whose value is `{ n }`, stored encoded as the number `n`. */
const countedPlugin = `import { definePlugin } from "context-host";
import Type from "typebox";

export default definePlugin({
  name: "counted",
  setup(api) {
    const { logger, clock } = api.services;
    const schema = Type.Codec(Type.Number())
      .Decode((n) => {
        logger.info("decode");
        return { n };
      })
      .Encode((value) => value.n);
    api.source({
      key: "counted/n",
      schema,
      load: () => {
        logger.info("load");
        return { n: clock.now() };
      },
      baseline: (value) => {
        logger.info("baseline");
        return "n is " + value.n;
      },
      update: (_previous, value) => {
        logger.info("update");
        return "n is now " + value.n;
      },
      removed: () => {
        logger.info("removed");
        return "n no longer applies";
      },
    });
  },
});
`;

describe("plugins: the runner decides, then renders", () => {
  const harness = usePluginHarness();

  /** A runner with the counted plugin set up as generation 1; `n` is what its loader returns. */
  async function countedRunner() {
    const folder = harness.tempFolder();
    const bundle = await bundlePlugin(write(path.join(folder, "counted.ts"), countedPlugin));
    const calls: string[] = [];
    const state = { n: 1 };
    const container = createContainer().register({
      clock: asValue({ now: () => state.n }),
      logger: asValue({ info: (line: string) => calls.push(line), warn() {}, error() {} }),
      location: asValue(folder),
    });
    const serve = createPluginRunner({ container, limits: { maxDepth: 64, maxValueBytes: 65_536 } });
    let id = 0;
    const request = async <T>(body: HostRequestBody): Promise<T> => {
      const reply = await serve({ ...body, id: ++id } as Parameters<typeof serve>[0]);
      if (!reply.ok) throw new Error(reply.fault.message);
      return reply.result as T;
    };
    const { code, entry, baseDir } = bundle;
    await request({ type: "evaluate", generation: 1, code, entry, baseDir, reserved: ["core"] });
    await request({ type: "activate", generation: 1, config: undefined, now: 0, setupDeadlineMs: 5000 });
    /** Observes `counted/n` once: with the admitted value sent (`stored`), and the number of the observation the host holds. */
    const observe = (asked: { readonly stored?: number; readonly held?: number }) =>
      request<Observed>({
        type: "observe",
        generation: 1,
        env: { location: folder },
        now: 0,
        deadlineMs: 1000,
        stored: asked.stored === undefined ? [] : [[0, asked.stored]],
        held: Float64Array.of(asked.held ?? 0),
      });
    /** The calls the plugin's code reported since the last time asked. */
    const called = () => calls.splice(0);
    return { state, observe, called };
  }

  it("an unchanged source is loaded and compared: sent as its code alone, nothing rendered or decoded", async () => {
    const { observe, called } = await countedRunner();
    const first = await observe({});
    expect([...first.kinds]).to.deep.equal([observationCodes.present]);
    const number = first.present[0]?.number as number;
    expect(called()).to.deep.equal(["load", "baseline", "removed"]);

    // The host holds that observation's texts, and its value is the admitted one (not sent again, or sent).
    for (const asked of [{ held: number }, { held: number, stored: 1 }]) {
      const again = await observe(asked);
      expect(again).to.deep.equal({ kinds: Uint8Array.of(observationCodes.unchanged), present: [], faults: [] });
      expect(called(), JSON.stringify(asked)).to.deep.equal(["load"]);
    }
  });

  it("a changed source is rendered once: its texts, and its update against the admitted value, decoded", async () => {
    const { state, observe, called } = await countedRunner();
    const number = (await observe({})).present[0]?.number as number;
    called();
    state.n = 2;
    const changed = await observe({ held: number });
    expect([...changed.kinds]).to.deep.equal([observationCodes.present]);
    expect(changed.present[0]).to.deep.include({
      value: 2,
      baseline: { ok: true, text: "n is 2" },
      removed: { ok: true, text: "n no longer applies" },
      previous: { decodes: true, update: { ok: true, text: "n is now 2" } },
    });
    expect(called()).to.deep.equal(["load", "baseline", "removed", "decode", "update"]);
  });

  it("a value the host holds but the runner no longer has is asked for again, without loading the source", async () => {
    const { observe, called } = await countedRunner();
    await observe({});
    called();
    const asked = await observe({ held: 999 });
    expect(asked).to.deep.equal({ kinds: Uint8Array.of(observationCodes["ask-again"]), present: [], faults: [] });
    expect(called()).to.deep.equal([]);
  });
});
