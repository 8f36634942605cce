// Owns the inside of `check`'s worker (decision 083): one plugin checked in a thread of
// its own, so a plugin that loops, exits or exhausts its heap ends this thread, never the
// `check` command. Posts the findings once, then ends.

import { parentPort, workerData } from "node:worker_threads";
import { type CheckPluginOptions, checkPlugin } from "./check-plugin.ts";

const { file, options } = workerData as { readonly file: string; readonly options: CheckPluginOptions };
const post = parentPort?.postMessage.bind(parentPort);
checkPlugin(file, options).then(
  (findings) => post?.({ ok: true, findings }),
  (error: unknown) => post?.({ ok: false, message: error instanceof Error ? error.message : String(error) }),
);
