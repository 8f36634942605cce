// Owns the inside of a shared plugin worker (decision 185): one realm (a `node:vm` context)
// per plugin, running the worker's program again for that plugin's runner alone. What one
// plugin changes of its globals and prototypes its thread mates never see; what the thread
// holds (`process`, built-in modules, packages) they share. A realm's timers close with it.

import { format } from "node:util";
import vm from "node:vm";
import workerThreads, { type MessagePort, workerData } from "node:worker_threads";
import { messageOf } from "../../base/errors.ts";
import type { RealmHooks, ThreadRequest, WorkerReply } from "./protocol.ts";

type Post = (message: WorkerReply) => void;

/** Serves the realms of a shared worker on its port; the bootstrap left the compiled program in `workerData.script`. */
export function serveRealms(port: MessagePort, post: Post): void {
  const data = workerData as { script?: vm.Script };
  const script = data.script;
  data.script = undefined;
  if (script === undefined) throw new Error("a shared plugin worker was started without its program");
  // Only this thread's own realm talks to the host: no plugin can read or answer another's requests.
  (workerThreads as { parentPort: unknown }).parentPort = null;
  const realms = new Map<number, ReturnType<typeof openRealm>>();
  port.on("message", (message: ThreadRequest) => {
    const { tag } = message;
    if (message.type === "close") {
      realms.get(tag)?.close();
      realms.delete(tag);
    } else if (message.type === "open") {
      try {
        realms.set(tag, openRealm(script, message, post));
        post({ type: "reply", tag, id: message.id, ok: true, result: null });
      } catch (error) {
        const fault = { phase: "evaluate" as const, message: `the plugin's realm could not be opened: ${messageOf(error)}` };
        post({ type: "reply", tag, id: message.id, ok: false, fault });
      }
    } else realms.get(tag)?.serve(message);
  });
}

/** The globals Node adds to a thread's own realm (a fresh context has the language's only); `global` is each realm's own. */
let nodeGlobals: readonly string[] | undefined;

/** Opens a plugin's realm: its runner's `serve`, and `close`, which clears the timers it left. */
function openRealm(script: vm.Script, open: Extract<ThreadRequest, { type: "open" }>, post: Post) {
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
  // A realm's own timers and console; every other global of Node's is the thread's.
  const sandbox: Record<string, unknown> = {
    __contextHostRealm: hooks,
    setTimeout: later(setTimeout as never, clearTimeout, true),
    setInterval: later(setInterval as never, clearInterval, false),
    setImmediate: later(setImmediate as never, clearImmediate, true),
    clearTimeout: cancel(clearTimeout),
    clearInterval: cancel(clearInterval),
    clearImmediate: cancel(clearImmediate),
    console: consoleFor(hooks.post),
  };
  nodeGlobals ??= (() => {
    const language = new Set(Object.getOwnPropertyNames(vm.runInNewContext("globalThis")));
    return Object.getOwnPropertyNames(globalThis).filter((name) => !language.has(name) && name !== "global");
  })();
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

/** A realm's console: its lines reach the host as the plugin's. */
function consoleFor(post: Post): Record<string, (...args: unknown[]) => void> {
  const [info, warn] = [logTo(post, "info", format), logTo(post, "warn", format)];
  return { log: info, info, debug: info, dir: info, warn, error: warn, trace: warn };
}

/** Posts a line of `level`, made by `text` of what it is given; a line that cannot be sent is dropped. */
export function logTo(post: Post, level: "info" | "warn" | "error", text: (...args: unknown[]) => string) {
  return (...args: unknown[]) => {
    try {
      post({ type: "log", level, message: text(...args) });
    } catch {
      // Dropped: the worker has nowhere else to say it.
    }
  };
}
