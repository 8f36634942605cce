// A boundary dashboard written against context-host's public entries only: it subscribes to
// `host.onBoundary` and prints one line per Safe Provider-Turn Boundary as it happens — the
// session, the epoch and why it began, what was admitted (a Baseline or an update), the
// request's size, the reply's usage and the timings. The host here is scripted (it echoes),
// and its one source changes between turns, so the dashboard shows an epoch start and an
// update; point `providers` at a real API to watch a real session.
//
//   npm install && npm start            (in this folder)

import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { type BoundaryEvent, createHost, scriptedProvider } from "context-host";
import { SystemContext } from "context-host/plugin";
import * as Context from "context-host/system-context";
import Type from "typebox";

/** One line of the dashboard. */
export function dashboardLine(event: BoundaryEvent): string {
  const admitted =
    event.baseline !== undefined
      ? `Baseline (${event.baseline.length} chars)`
      : event.update !== undefined
        ? `update: ${JSON.stringify(event.update)}`
        : "nothing new";
  const sent = event.request === undefined ? "" : ` · ${event.request.messages.length} message(s) sent`;
  const usage =
    event.usage === undefined ? "" : ` · in ${event.usage.input}, cache read ${event.usage.cacheRead}, out ${event.usage.output}`;
  const timings = `${event.timings.boundaryMs} ms boundary${event.timings.providerMs === undefined ? "" : `, ${event.timings.providerMs} ms provider`}`;
  return `${event.sessionId.slice(0, 8)}  epoch ${event.epoch.number} (${event.epoch.reason})  ${admitted}${sent}${usage}  [${timings}]`;
}

const folder = mkdtempSync(path.join(os.tmpdir(), "dashboard-"));
let branch = "main";
const gitBranch = Context.make({
  key: "git/branch",
  schema: Type.String(),
  load: () => branch ?? SystemContext.absent,
  baseline: (b: string) => `Git branch: ${b}`,
  update: (_previous: string, b: string) => `The git branch is now ${b}.`,
});
const host = await createHost({
  dataDir: path.join(folder, "data"),
  providers: { scripted: scriptedProvider() },
  core: [{ key: "git/branch", load: () => gitBranch }],
  builtins: false,
  plugins: [],
  watch: false,
});
try {
  const stop = host.onBoundary((event) => console.log(dashboardLine(event)));
  const id = await host.createSession({ location: folder, provider: "scripted", model: "echo" });
  for (const [turn, text] of ["What branch am I on?", "Anything new?", "And now?"].entries()) {
    if (turn === 1) branch = "feature";
    await host.prompt(id, text);
    await host.step(id);
  }
  stop();
} finally {
  await host.close();
  rmSync(folder, { recursive: true, force: true });
}
