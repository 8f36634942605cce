import { parentPort } from "node:worker_threads";
import * as g from "/work/h-iso/core/plugins/generation.ts";
import * as e from "/work/h-iso/core/plugins/evaluate.ts";
import * as s from "/work/h-iso/core/system-context/index.ts";
parentPort!.postMessage(["ready", typeof g, typeof e, typeof s]);
