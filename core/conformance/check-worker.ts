// Owns the inside of `check`'s worker (decision 083): one plugin checked in a thread of
// its own, so a plugin that loops, exits or exhausts its heap ends this thread, never the
// `check` command. Posts each step it starts and each finding as it is made (so the
// runner can name what never returned, decision 110), then the findings once, and ends.

import { parentPort, workerData } from "node:worker_threads";
import { type CheckPluginOptions, runPluginChecks } from "./check-plugin.ts";

const { file, options } = workerData as { readonly file: string; readonly options: CheckPluginOptions };
const post = parentPort?.postMessage.bind(parentPort);
runPluginChecks(file, options, {
  named: (plugin) => post?.({ type: "named", plugin }),
  step: (step) => post?.({ type: "step", step }),
  finding: (finding) => post?.({ type: "finding", finding }),
}).then(
  (findings) => post?.({ type: "done", findings }),
  (error: unknown) => post?.({ type: "failed", message: error instanceof Error ? error.message : String(error) }),
);
