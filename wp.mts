const c0 = process.cpuUsage(); const t1 = performance.now();
const { workerProgram } = await import("./core/plugins/worker/plugin-worker.ts");
await workerProgram();
const c = process.cpuUsage(c0);
console.log("build wall", (performance.now() - t1).toFixed(0), "in-process cpu", ((c.user + c.system) / 1000).toFixed(0));
