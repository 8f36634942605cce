// Owns the host's side of plugin worker threads (decisions 060, 185): the worker's program,
// threads with a heap limit (beyond `dedicatedWorkers` plugins, shared: a realm per plugin),
// requests with deadlines kept by the host's clock, and a thread's end, whatever ends it.

import { fileURLToPath } from "node:url";
import vm from "node:vm";
import { Worker } from "node:worker_threads";
import type { DiagnosticPhase } from "../base/diagnostics.ts";
import { messageOf } from "../base/errors.ts";
import { bundleWorkerProgram } from "./bundle.ts";
import type { PluginLimits } from "./limits.ts";
import { storedCodeCache } from "./program-cache.ts";
import {
  type Describe,
  type HostRequestBody,
  type PluginTransport,
  PluginWorkerFault,
  PluginWorkerStopped,
  phaseCodes,
  progress,
  sanitizeFault,
  type ThreadRequest,
  type WorkerInit,
  type WorkerReply,
} from "./protocol.ts";

/** The worker's entry, in `worker/`: TypeScript in the repository, JavaScript in the package. */
const entryFile = fileURLToPath(
  new URL(import.meta.url.endsWith(".ts") ? "./worker/entry.ts" : "./worker/entry.js", import.meta.url),
);

let workerCode: Promise<WorkerProgram> | undefined;

/**
 * The worker's program as one script, built once per host process: it starts faster than a
 * tree of modules, runs the same from TypeScript sources and the package, and gives every
 * plugin of a worker one copy of TypeBox and the plugin API.
 */
export function workerProgram(): Promise<WorkerProgram> {
  workerCode ??= bundleWorkerProgram(entryFile).then(withCodeCache, (error) => {
    workerCode = undefined;
    throw error;
  });
  return workerCode;
}

/**
 * A worker's program, and what a worker is sent: its bytes (one-byte text) and V8's code
 * cache, in shared memory (nothing copied, little compiled); where that cache is stored, and
 * whether one of them must store it (`claim`: the cell the first to do it takes).
 */
function withCodeCache(source: string) {
  const filename = "context-host-plugin-worker.js";
  // Latin-1 bytes carry one-byte text exactly; a wider character would be cut (and make V8
  // hold the text at two bytes a character in every worker).
  if (/[\u0100-\uffff]/.test(source)) throw new Error("the plugin worker's program is not one-byte text");
  // Stored by a worker once it has served a plugin (decision 193), so it holds the code that
  // evaluating, setting up and observing compiled too; else made here (uncompiled functions only).
  const stored = storedCodeCache(source);
  const cache = stored.bytes ?? new vm.Script(source, { filename }).createCachedData();
  const bytes = new SharedArrayBuffer(source.length + cache.length);
  const view = Buffer.from(bytes);
  view.write(source, 0, "latin1");
  cache.copy(view, source.length);
  const claim = new SharedArrayBuffer(4);
  return {
    source,
    shared: { bytes, sourceLength: source.length, filename, cacheFile: stored.file, isStored: stored.bytes !== undefined, claim },
  };
}
type WorkerProgram = ReturnType<typeof withCodeCache>;

/**
 * What a worker runs first: the program compiled with its cache, read from the shared bytes,
 * whose reference leaves `workerData` before the program runs (no plugin reaches memory every
 * worker reads); the rest are a function's locals, so V8 keeps only the program's text.
 */
const bootstrap = `"use strict";
(() => {
  const { workerData: data, parentPort: port, threadId } = process.getBuiltinModule("node:worker_threads");
  const { bytes, sourceLength, filename, cacheFile, isStored, claim } = data.program;
  data.program = undefined;
  const all = Buffer.from(bytes);
  const source = all.toString("latin1", 0, sourceLength);
  const script = new (process.getBuiltinModule("node:vm").Script)(source, { filename, cachedData: all.subarray(sourceLength) });
  // A shared worker runs it again in each plugin's realm (decision 185).
  if (data.shared) data.script = script;
  if (cacheFile !== undefined && (!isStored || script.cachedDataRejected)) {
    // The first worker to answer an observation (a reply with \`kinds\`) stores the code
    // cache (why then: \`withCodeCache\`); no failure is an error.
    const post = port.postMessage;
    port.postMessage = function (message) {
      post.apply(this, arguments);
      if (message?.result?.kinds === undefined || Atomics.compareExchange(new Int32Array(claim), 0, 0, 1) !== 0) return;
      const fs = process.getBuiltinModule("node:fs");
      const temp = cacheFile + "." + process.pid + "-" + threadId + ".tmp";
      try {
        fs.writeFileSync(temp, script.createCachedData(), { mode: 0o600 });
        fs.renameSync(temp, cacheFile);
      } catch {
        try { fs.rmSync(temp, { force: true }); } catch {}
      }
    };
  }
  script.runInThisContext();
})();
`;

/** Takes a line a plugin logged or printed. */
type Log = (level: "info" | "warn" | "error", message: string) => void;
type OnStopped = (stopped: PluginWorkerStopped) => void;

interface Pending {
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: unknown) => void;
  readonly timer: NodeJS.Timeout;
  readonly describe: Describe;
}

const startDeadlineMs = 10_000;
const opening: Describe = () => ({ what: "opening the plugin's realm", phase: "evaluate" });

/**
 * A worker's young generation, MiB: three semi-spaces of 1 MiB, V8's smallest. A larger one
 * kept a resident MiB or more of what a plugin allocated as it loaded (decision 061); a
 * smaller one only scavenges more often.
 */
const youngGenerationMb = 3;

/** Longest line of worker output kept. */
const maxLogLine = 4096;

/** One worker thread of plugin code, a plugin's own or shared (decision 185): whatever stops it stops every plugin on it. */
class PluginThread {
  readonly worker: Worker;
  readonly log: Log;
  readonly isShared: boolean;
  /** The plugins placed on it, opened or opening, by tag (a dedicated thread's one: tag 0). */
  readonly plugins = new Map<number, PluginWorker>();
  #nextTag = 1;
  /** Being ended: nothing more is placed on it. */
  isEnding = false;
  #lastError: unknown;
  /** Where a shared one adds the plugins that were running when it stopped: they run alone from then on. */
  readonly #alone: Set<string>;
  readonly ready: Promise<void>;
  readonly exited: Promise<void>;

  /** `init`: the worker's one plugin's; without it the thread is shared, realms opened by request. */
  constructor(program: WorkerProgram, heapMb: number, init: WorkerInit | undefined, log: Log, alone: Set<string>) {
    this.log = log;
    this.isShared = init === undefined;
    this.#alone = alone;
    this.worker = new Worker(bootstrap, {
      eval: true,
      workerData: { ...(init ?? { shared: true }), program: program.shared },
      resourceLimits: { maxOldGenerationSizeMb: heapMb, maxYoungGenerationSizeMb: Math.min(youngGenerationMb, heapMb / 4) },
      execArgv: [],
      env: { ...process.env },
      stdout: true,
      stderr: true,
      name: this.isShared ? "context-host plugins" : "context-host plugin",
    });
    this.#forward(this.worker.stdout, "info");
    this.#forward(this.worker.stderr, "warn");
    this.worker.on("message", (message: WorkerReply) => {
      if (typeof message === "object" && message !== null)
        this.plugins.get(this.isShared ? Number(message.tag) : 0)?.receive(message);
    });
    this.worker.on("error", (error) => {
      this.#lastError = error;
    });
    // A message the host's thread cannot read (too deep for its stack, say) ends the worker.
    this.worker.on("messageerror", (error) => {
      this.#lastError = new Error(`it sent a message the host could not read (${messageOf(error)})`);
      this.#end();
    });
    const notStarted = `the plugin's worker did not start within ${startDeadlineMs} ms`;
    const timer = setTimeout(() => this.#stopAll(notStarted), startDeadlineMs);
    const exit = new Promise<number>((resolve) => this.worker.once("exit", resolve));
    this.exited = exit.then((code) => this.#stopAll(this.#why(code, heapMb)));
    // Ready at its first message (entry.ts), or once it ended.
    const firstMessage = new Promise((resolve) => this.worker.once("message", resolve));
    this.ready = Promise.race([firstMessage, this.exited]).then(() => clearTimeout(timer));
  }

  /** Places a plugin here; returns its tag (a dedicated thread: 0). */
  place(plugin: PluginWorker): number {
    const tag = this.isShared ? this.#nextTag++ : 0;
    this.plugins.set(tag, plugin);
    return tag;
  }

  /** Stops the thread because `culprit` missed a deadline: the culprit with `stopped`, its thread mates with why. */
  stopFor(culprit: PluginWorker, stopped: PluginWorkerStopped, missedId: number): void {
    this.#end();
    culprit.stop(stopped, missedId);
    if (this.isShared) this.#alone.add(culprit.plugin);
    this.#stopAll(
      `the worker this plugin shares with others (plugins beyond the dedicated workers share them) was stopped for another plugin, ${culprit.plugin}: ${stopped.reason}`,
      true,
    );
  }

  /** A plugin leaves (`isBusy`: a request of it awaits its answer): a shared thread closes its realm, or ends with its last plugin. */
  async release(plugin: PluginWorker, tag: number, isBusy: boolean): Promise<void> {
    const isLast = [...this.plugins.values()].every((other) => other === plugin || other.stopped !== undefined);
    if (this.isShared && !isLast && !isBusy) {
      this.plugins.delete(tag);
      plugin.stop(new PluginWorkerStopped({ reason: "the plugin was closed" }));
      return this.worker.postMessage({ type: "close", tag } satisfies ThreadRequest);
    }
    // A realm whose code is still running cannot be closed alone: its thread mates restart (decision 185).
    if (this.isShared && !isLast) this.#stopAll("a plugin it shares its worker with was stopped while its code ran", true);
    else this.#end();
    await this.exited;
  }

  /** Nothing more is placed on it; its worker is terminated (again, if it was). */
  #end() {
    this.isEnding = true;
    void this.worker.terminate().catch(() => {});
  }

  /** Ends the thread and stops every plugin on it not stopped yet, each with `reason` and where its own code was. */
  #stopAll(reason: string, forAnother = false) {
    this.#end();
    // Plugins running code when it stopped are culprits; when one is known (or it stopped
    // `forAnother`), its mates' stops are collateral (not their own), else every stop counts.
    const stopping = [...this.plugins.values()].flatMap((p) => (p.stopped === undefined ? [[p, p.running()] as const] : []));
    const isCulpritKnown = forAnother || stopping.some(([, running]) => running !== undefined);
    for (const [plugin, running] of stopping) {
      const isCollateral = this.isShared && isCulpritKnown && running === undefined;
      plugin.stop(new PluginWorkerStopped({ reason, phase: running?.phase, key: running?.key, isCollateral }));
      if (this.isShared && running !== undefined) this.#alone.add(plugin.plugin);
    }
  }

  #why(code: number, heapMb: number): string {
    const error = this.#lastError as (Error & { code?: string }) | undefined;
    const worker = this.isShared ? `the worker the plugin shares with others` : `the plugin's worker`;
    if (error?.code === "ERR_WORKER_OUT_OF_MEMORY") return `${worker} ran out of memory (heap limit ${heapMb} MiB)`;
    if (error !== undefined) return `${worker} crashed: ${messageOf(error)}`;
    return `${worker} exited with code ${code}`;
  }

  #forward(stream: NodeJS.ReadableStream, level: "info" | "warn") {
    let buffered = "";
    stream.setEncoding("utf8");
    stream.on("data", (chunk: string) => {
      buffered += chunk;
      const lines = buffered.split("\n");
      buffered = (lines.pop() ?? "").slice(0, maxLogLine);
      for (const line of lines) this.log(level, line.slice(0, maxLogLine));
    });
  }
}

/** One plugin's transport to its worker thread (own or shared). Once stopped it stays stopped: a restart is a new one. */
export class PluginWorker implements PluginTransport {
  /** Its file, named to its thread mates when it stops a shared worker. */
  readonly plugin: string;
  readonly #thread: PluginThread;
  readonly #tag: number;
  readonly #cells: Int32Array;
  readonly #pending = new Map<number, Pending>();
  #nextId = 1;
  #stopped: PluginWorkerStopped | undefined;
  /** Told if the worker ends unasked: from the plugin's opening to its closing. */
  #onStopped: OnStopped | undefined;

  constructor(plugin: string, thread: PluginThread, init: WorkerInit) {
    this.plugin = plugin;
    this.#thread = thread;
    this.#cells = new Int32Array(init.progress);
    this.#tag = thread.place(this);
  }

  /** Opens the plugin once its thread is ready (shared: in a realm of its own); rejects with `PluginWorkerStopped` if it ends first. */
  async open(init: WorkerInit, onStopped: OnStopped): Promise<this> {
    await this.#thread.ready;
    if (this.#thread.isShared) {
      try {
        await this.request({ type: "open", init }, startDeadlineMs, opening);
      } catch (error) {
        await this.terminate();
        throw error instanceof PluginWorkerStopped ? error : new PluginWorkerStopped({ reason: messageOf(error) });
      }
    }
    if (this.#stopped !== undefined) throw this.#stopped;
    this.#onStopped = onStopped;
    return this;
  }

  get stopped(): PluginWorkerStopped | undefined {
    return this.#stopped;
  }

  /** As `PluginTransport.request`: a request that misses `ms` stops the worker. */
  request<T>(request: HostRequestBody | { readonly type: "open"; readonly init: WorkerInit }, ms: number, describe: Describe) {
    if (this.#stopped !== undefined) return Promise.reject(this.#stopped);
    const id = this.#nextId++;
    return new Promise<T>((resolve, reject) => {
      // The deadline starts before the request is copied out.
      const timer = setTimeout(() => this.#missed(id, ms), ms);
      try {
        this.#thread.worker.postMessage(this.#thread.isShared ? { ...request, id, tag: this.#tag } : { ...request, id });
        this.#pending.set(id, { resolve: resolve as (value: unknown) => void, reject, timer, describe });
      } catch (error) {
        clearTimeout(timer);
        reject(new PluginWorkerStopped({ reason: `could not send to the plugin's worker: ${messageOf(error)}` }));
      }
    });
  }

  /** Stops the plugin's code at once (running or not) and waits until it ended. */
  async terminate(): Promise<void> {
    this.#onStopped = undefined;
    await this.#thread.release(this, this.#tag, this.#pending.size > 0);
  }

  #missed(id: number, ms: number) {
    const described = this.#described(id);
    if (described === undefined) return;
    const reason = `${described.what} missed its deadline of ${described.ms ?? ms} ms; the plugin's worker was stopped`;
    this.#thread.stopFor(this, new PluginWorkerStopped({ reason, phase: described.phase, key: described.key }), id);
  }

  /** What request `id` was doing, as it describes itself: with the phase and source of its code if that runs now (the progress cells). */
  #described(id: number) {
    const code = Atomics.load(this.#cells, progress.phase);
    const isRunning = code > 0 && Atomics.load(this.#cells, progress.request) === id;
    const phase = isRunning ? (phaseCodes[code] as DiagnosticPhase) : undefined;
    return this.#pending.get(id)?.describe(phase, Atomics.load(this.#cells, progress.source));
  }

  /** A reply or a log line of this plugin's runner. */
  receive(message: WorkerReply) {
    if (message.type === "log") {
      if (typeof message.message === "string" && ["info", "warn", "error"].includes(message.level))
        this.#thread.log(message.level, message.message.slice(0, maxLogLine));
      return;
    }
    if (message.type !== "reply") return;
    const pending = this.#pending.get(message.id);
    if (pending === undefined) return;
    this.#pending.delete(message.id);
    clearTimeout(pending.timer);
    if (message.ok === true) pending.resolve(message.result);
    else pending.reject(new PluginWorkerFault({ fault: sanitizeFault(message.fault) }));
  }

  /** What the plugin's code is doing now, if it runs: the request running (the progress cells), as it describes itself. */
  running() {
    const isIdle = Atomics.load(this.#cells, progress.phase) === 0;
    return isIdle ? undefined : this.#described(Atomics.load(this.#cells, progress.request));
  }

  /** Stops this plugin's transport, once: `missedId`'s request first, then every other. */
  stop(stopped: PluginWorkerStopped, missedId = 0) {
    if (this.#stopped !== undefined) return;
    this.#stopped = stopped;
    const missed = this.#pending.get(missedId);
    for (const pending of new Set([missed, ...this.#pending.values()])) {
      clearTimeout(pending?.timer);
      pending?.reject(stopped);
    }
    this.#pending.clear();
    // Before it was open, a stop is the start's failure (the caller holds no worker yet).
    this.#onStopped?.(stopped);
  }
}

/**
 * Where plugins' code runs (decision 185): a worker of its own for each plugin up to
 * `dedicatedWorkers`, beyond them shared workers of `pluginsPerWorker`. A plugin that stopped
 * a shared worker gets one of its own from then on, so it cannot stop its mates again.
 */
export class PluginWorkers {
  readonly #threads = new Set<PluginThread>();
  /** Plugins that stopped a shared worker. */
  readonly #alone = new Set<string>();

  /** `init`: what every plugin's runner starts with; `log`: a line a plugin logged or printed. */
  constructor(
    readonly limits: PluginLimits,
    readonly init: Omit<WorkerInit, "progress">,
    readonly log: Log,
  ) {}

  /** Starts `plugin`'s transport: a worker of its own, or a realm on a shared one. */
  async start(plugin: string, onStopped: OnStopped): Promise<PluginWorker> {
    // From the program to placing the plugin nothing awaits: plugins starting together are
    // counted in order and fill one shared thread before another is made.
    const program = await workerProgram();
    const { heapMb, dedicatedWorkers, pluginsPerWorker } = this.limits;
    const init = { ...this.init, progress: new SharedArrayBuffer(progress.length * Int32Array.BYTES_PER_ELEMENT) };
    const threads = [...this.#threads];
    const dedicated = threads.filter((thread) => !thread.isShared).length;
    const isDedicated = dedicated < dedicatedWorkers || pluginsPerWorker < 2 || this.#alone.has(plugin);
    let thread = isDedicated ? undefined : threads.find((t) => t.isShared && !t.isEnding && t.plugins.size < pluginsPerWorker);
    if (thread === undefined) {
      const created = new PluginThread(program, heapMb, isDedicated ? init : undefined, this.log, this.#alone);
      this.#threads.add(created);
      void created.exited.then(() => this.#threads.delete(created));
      thread = created;
    }
    return new PluginWorker(plugin, thread, init).open(init, onStopped);
  }
}
