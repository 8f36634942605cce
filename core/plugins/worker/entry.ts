// Owns the inside of a plugin's worker (decision 060): the plugin runner on the thread's port,
// with the services a plugin gets. Whatever plugin code does here (a loop, an exit, a changed
// prototype, a leaked timer) stays in this thread; the host checks what it sends. A shared
// worker (decision 185) runs this program again in a realm (a `node:vm` context) per plugin: what
// one plugin changes of its globals and prototypes its mates never see; what the thread holds
// (`process`, built-in modules, packages) they share. A realm's timers close with it.

import { format } from "node:util";
import vm from "node:vm";
import workerThreads, { type MessagePort, parentPort, workerData } from "node:worker_threads";
import { asValue, createContainer } from "awilix";
import { messageOf } from "../../base/errors.ts";
import type { HostRequest, RealmHooks, ThreadRequest, WorkerInit, WorkerReply } from "../protocol.ts";
import { createPluginRunner } from "../runner.ts";

type Post = (message: WorkerReply) => void;

/** Serves one plugin's runner: requests in, replies and log lines out. */
function serveRunner(init: WorkerInit, post: Post): (request: HostRequest) => void {
  // Taken before any plugin code runs: a plugin cannot swap them for its own.
  const { now: dateNow } = Date;
  const { freeze } = Object;
  let hostNow = dateNow();
  const clock = { now: init.clock === "system" ? () => dateNow() : () => hostNow };
  const send = (level: "info" | "warn" | "error") => logTo(post, level, String);
  const container = createContainer().register({
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

/** Serves the realms of a shared worker on its port; the bootstrap left the compiled program in `workerData.script`. */
function serveRealms(port: MessagePort, post: Post): void {
  const script: vm.Script | undefined = workerData.script;
  workerData.script = undefined;
  if (script === undefined) throw new Error("a shared plugin worker was started without its program");
  // Only this thread's own realm talks to the host: no plugin can read or answer another's requests.
  (workerThreads as { parentPort: unknown }).parentPort = null;
  // The globals Node adds to the thread's own realm (a fresh context has the language's only); `global` is each realm's own.
  const language = new Set(Object.getOwnPropertyNames(vm.runInNewContext("globalThis")));
  const nodeGlobals = Object.getOwnPropertyNames(globalThis).filter((name) => !language.has(name) && name !== "global");
  const realms = new Map<number, ReturnType<typeof openRealm>>();
  port.on("message", (message: ThreadRequest) => {
    const { tag } = message;
    if (message.type === "close") {
      realms.get(tag)?.close();
      realms.delete(tag);
    } else if (message.type === "open") {
      try {
        realms.set(tag, openRealm(script, message, post, nodeGlobals));
        post({ type: "reply", tag, id: message.id, ok: true, result: null });
      } catch (error) {
        const fault = { phase: "evaluate" as const, message: `the plugin's realm could not be opened: ${messageOf(error)}` };
        post({ type: "reply", tag, id: message.id, ok: false, fault });
      }
    } else realms.get(tag)?.serve(message);
  });
}

/** Opens a plugin's realm: its runner's `serve`, and `close`, which clears the timers it left. */
function openRealm(script: vm.Script, open: Extract<ThreadRequest, { type: "open" }>, post: Post, nodeGlobals: string[]) {
  const { tag } = open;
  const timers = new Map<unknown, (handle: never) => void>();
  const later =
    (start: (run: () => void, ...rest: unknown[]) => unknown, clear: (handle: never) => void, isOnce: boolean) =>
    (run: unknown, ...rest: unknown[]) => {
      if (typeof run !== "function") return start(run as () => void, ...rest);
      const handle = start(
        (...args: unknown[]) => {
          if (isOnce) timers.delete(handle);
          run(...args);
        },
        ...rest,
      );
      timers.set(handle, clear);
      return handle;
    };
  const cancel = (clear: (handle: never) => void) => (handle: unknown) => {
    timers.delete(handle);
    clear(handle as never);
  };
  const hooks: RealmHooks = {
    init: open.init,
    post: (reply) => post({ ...reply, tag }),
    require: (id) => (id === "node:vm" || id === "vm" ? realmVm : process.getBuiltinModule(id)),
  };
  const [info, warn] = [logTo(hooks.post, "info", format), logTo(hooks.post, "warn", format)];
  // A realm's own timers and console (its lines reach the host as the plugin's); every other global of Node's is the thread's.
  const sandbox: Record<string, unknown> = {
    __contextHostRealm: hooks,
    setTimeout: later(setTimeout as never, clearTimeout, true),
    setInterval: later(setInterval as never, clearInterval, false),
    setImmediate: later(setImmediate as never, clearImmediate, true),
    clearTimeout: cancel(clearTimeout),
    clearInterval: cancel(clearInterval),
    clearImmediate: cancel(clearImmediate),
    console: { log: info, info, debug: info, dir: info, warn, error: warn, trace: warn },
  };
  for (const name of nodeGlobals.filter((name) => !Object.hasOwn(sandbox, name)))
    Object.defineProperty(sandbox, name, { get: () => Reflect.get(globalThis, name), configurable: true, enumerable: false });
  const context = vm.createContext(sandbox, { name: `plugin realm ${tag}` });
  // A plugin's module is compiled into its realm, not the thread's.
  const realmVm = {
    ...vm,
    compileFunction: (code: string, params?: string[], options?: vm.CompileFunctionOptions) =>
      vm.compileFunction(code, params, { ...options, parsingContext: context }),
  };
  vm.runInContext("globalThis.global = globalThis", context);
  script.runInContext(context);
  const serve = hooks.serve;
  if (serve === undefined) throw new Error("the worker's program did not start a runner");
  return {
    serve,
    close() {
      for (const [handle, clear] of timers) clear(handle as never);
      timers.clear();
    },
  };
}

/** Posts a line of `level`, made by `text` of what it is given; a line that cannot be sent is dropped. */
function logTo(post: Post, level: "info" | "warn" | "error", text: (...args: unknown[]) => string) {
  return (...args: unknown[]) => {
    try {
      post({ type: "log", level, message: text(...args) });
    } catch {
      // Dropped: the worker has nowhere else to say it.
    }
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
