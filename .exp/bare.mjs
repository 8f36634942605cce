import { Worker } from "node:worker_threads";
const N = Number(process.argv[2] ?? 10);
let t0 = performance.now();
const ws = Array.from({ length: N }, () => new Worker(`require("node:worker_threads").parentPort.postMessage(1)`, { eval: true }));
await Promise.all(ws.map(w => new Promise(r => w.once("message", r))));
console.log(N, "bare workers ms", (performance.now() - t0).toFixed(1));
await Promise.all(ws.map(w => w.terminate()));
