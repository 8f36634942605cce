// A reload storm: many saves of one plugin in a short time, in place and by rename,
// through the real watcher. Small in `npm test`; the full size (200 writes in
// 2 s) with CONTEXT_HOST_LONG set (`npm run test:long`).

import path from "node:path";
import { expect } from "chai";
import { baselineOf, eventually, logLines, saveByRename, sleep, textPlugin, usePluginHarness, write } from "./harness.ts";

const isLong = Boolean(process.env.CONTEXT_HOST_LONG);
const writes = isLong ? 200 : 40;
const spanMs = isLong ? 2000 : 500;

/** How many times each tag occurs among the log lines starting with `what`. */
function counts(lines: readonly string[], what: "setup" | "dispose"): Map<string, number> {
  const counted = new Map<string, number>();
  for (const line of lines) {
    if (!line.startsWith(`${what} `)) continue;
    const tag = line.slice(what.length + 1);
    counted.set(tag, (counted.get(tag) ?? 0) + 1);
  }
  return counted;
}

describe("Plugin host: reload storm", function () {
  this.timeout(isLong ? 60_000 : 20_000);
  const harness = usePluginHarness();

  it(`${writes} writes in ${spanMs / 1000} s end with the final content active, one generation, every disposer run once`, async () => {
    const folder = harness.tempFolder();
    const log = path.join(folder, "lifecycle.log");
    const file = write(path.join(folder, "storm.ts"), textPlugin({ name: "storm", value: "v0", log }));
    write(path.join(folder, "calm.ts"), textPlugin({ name: "calm", value: "steady" }));
    const running = await harness.start({ folders: [folder] });

    const started = Date.now();
    for (let i = 1; i <= writes; i++) {
      const content = textPlugin({ name: "storm", value: `v${i}`, log });
      // Most editors write in place; some save by renaming a temporary file over the plugin.
      if (i % 4 === 0) saveByRename(file, content);
      else write(file, content);
      const due = started + (i * spanMs) / writes;
      await sleep(Math.max(0, due - Date.now()));
    }

    const final = `v${writes}`;
    await eventually(
      async () => (await baselineOf(running)).baseline === `calm: steady\n\nstorm: ${final}`,
      `storm: ${final}`,
      10_000,
    );
    await running.host.settled();

    // Exactly one active generation of the plugin, serving the final content.
    expect(running.host.plugins().filter((p) => p.name === "storm")).to.have.length(1);
    expect(running.registry.state.registrations.map((r) => r.key)).to.deep.equal(["calm/status", "storm/status"]);
    expect((await baselineOf(running)).baseline).to.equal(`calm: steady\n\nstorm: ${final}`);

    // Each generation set up once; every one except the active one disposed exactly once.
    const lines = logLines(log);
    const setups = counts(lines, "setup");
    const disposals = counts(lines, "dispose");
    expect(
      [...setups.values()].every((n) => n === 1),
      "each content set up once",
    ).to.equal(true);
    expect(setups.has(final)).to.equal(true);
    expect([...disposals.keys()].sort()).to.deep.equal([...setups.keys()].filter((tag) => tag !== final).sort());
    expect(
      [...disposals.values()].every((n) => n === 1),
      "each disposer ran once",
    ).to.equal(true);

    await running.host.close();
    const closed = logLines(log);
    expect([...counts(closed, "dispose").keys()].sort()).to.deep.equal([...counts(closed, "setup").keys()].sort());
    expect(
      [...counts(closed, "dispose").values()].every((n) => n === 1),
      "each disposer ran once after close",
    ).to.equal(true);
  });
});
