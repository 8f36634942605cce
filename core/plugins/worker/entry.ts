// Owns the inside of a plugin's worker (decision 060): the plugin runner on the thread's port,
// with the services a plugin gets. Whatever plugin code does here (a loop, an exit, a changed
// prototype, a leaked timer) stays in this thread; the host checks what it sends. In a shared
// worker (decision 185) it opens a realm per plugin (`realms.ts`) and runs again in each.

import { parentPort, workerData } from "node:worker_threads";
import { asValue, createContainer } from "awilix";
import { messageOf } from "../../base/errors.ts";
import { createPluginRunner } from "../runner.ts";
import type { HostRequest, RealmHooks, WorkerInit, WorkerReply } from "./protocol.ts";
import { logTo, serveRealms } from "./realms.ts";

/** Serves one plugin's runner: requests in, replies and log lines out. */
function serveRunner(init: WorkerInit, post: (reply: WorkerReply) => void): (request: HostRequest) => void {
  // Taken before any plugin code runs: a plugin cannot swap them for its own.
  const { now: dateNow } = Date;
  const { freeze } = Object;
  let hostNow = dateNow();
  const clock = { now: init.clock === "system" ? () => dateNow() : () => hostNow };
  const send = (level: "info" | "warn" | "error") => logTo(post, level, String);
  const container = createContainer();
  container.register({
    clock: asValue(freeze(clock)),
    logger: asValue(freeze({ info: send("info"), warn: send("warn"), error: send("error") })),
    location: asValue(init.location),
  });
  const serve = createPluginRunner({ container, limits: init, cells: new Int32Array(init.progress) });
  return (request) => {
    if ("now" in request) hostNow = request.now;
    void serve(request).then((reply) => {
      try {
        post({ type: "reply", id: request.id, ...reply });
      } catch (error) {
        const message = `the worker could not send its result: ${messageOf(error)}`;
        post({ type: "reply", id: request.id, ok: false, fault: { phase: "value", message } });
      }
    });
  };
}

const realm = (globalThis as { __contextHostRealm?: RealmHooks }).__contextHostRealm;
if (realm !== undefined) {
  // Inside a plugin's realm of a shared worker: the hooks are taken, then gone from its global.
  delete (globalThis as { __contextHostRealm?: RealmHooks }).__contextHostRealm;
  realm.serve = serveRunner(realm.init, realm.post);
} else {
  const port = parentPort;
  if (port === null) throw new Error("core/plugins/worker/entry runs inside a plugin worker only");
  const post = port.postMessage.bind(port);
  const data = workerData as WorkerInit | { readonly shared: true };
  if ("shared" in data) serveRealms(port, post);
  else port.on("message", serveRunner(data, post));
  // Deadlines start from here: a slow start-up never counts against a plugin's own.
  post({ type: "ready" } satisfies WorkerReply);
}
