// Measures plugin workers from outside them (no hook in the product): every worker thread this
// process starts is noted as it starts (`process` emits "worker"), and a worker's live heap is
// the sum of the objects in a heap snapshot of it (V8 collects garbage before it takes one).

import type { Worker } from "node:worker_threads";

const started = new Map<number, Worker>();
process.on("worker", (worker: Worker) => {
  const id = worker.threadId;
  started.set(id, worker);
  worker.once("exit", () => started.delete(id));
});

/** The worker threads this process started that still run, oldest first. */
export function runningWorkers(): Worker[] {
  return [...started.values()];
}

/** The bytes of the live objects on a worker's heap, after a full collection. */
export async function workerHeapBytes(worker: Worker): Promise<number> {
  const chunks: string[] = [];
  const stream = await worker.getHeapSnapshot();
  stream.setEncoding("utf8");
  for await (const chunk of stream) chunks.push(chunk as string);
  const snapshot = JSON.parse(chunks.join("")) as {
    snapshot: { meta: { node_fields: string[] } };
    nodes: number[];
  };
  const fields = snapshot.snapshot.meta.node_fields;
  const selfSize = fields.indexOf("self_size");
  let bytes = 0;
  for (let i = selfSize; i < snapshot.nodes.length; i += fields.length) bytes += snapshot.nodes[i] as number;
  return bytes;
}
