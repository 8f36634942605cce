// Owns the host's side of one plugin worker (decision 060): starting the thread with a
// heap limit, requests with deadlines kept by the host's own clock, and the end of the
// thread, whatever ends it (a missed deadline, `process.exit`, an uncaught exception or
// unhandled rejection, running out of memory). Nothing here interprets a plugin. Beyond
// `dedicatedWorkers` plugins, threads are shared, a realm per plugin (decision 185).

import path from "node:path";
import { fileURLToPath } from "node:url";
import vm from "node:vm";
import { Worker } from "node:worker_threads";
import * as esbuild from "esbuild";
import type { DiagnosticPhase } from "../../base/diagnostics.ts";
import { messageOf } from "../../base/errors.ts";
import type { Location } from "../locations.ts";
import { type Describe, type PluginTransport, PluginWorkerFault, PluginWorkerStopped } from "../transport.ts";
import { cachedProgram } from "./program-cache.ts";
import {
  type HostRequestBody,
  phaseCodes,
  progress,
  type ThreadRequest,
  type WorkerFault,
  type WorkerInit,
  type WorkerReply,
} from "./protocol.ts";

/** The worker's entry: TypeScript beside this file in the repository, JavaScript in the package. */
const entryFile = fileURLToPath(new URL(import.meta.url.endsWith(".ts") ? "./entry.ts" : "./entry.js", import.meta.url));

let workerCode: Promise<WorkerProgram> | undefined;

/**
 * The worker's program as one script: the entry bundled with everything it imports
 * (TypeBox, awilix, the plugin API), built once per host process with esbuild. One
 * script starts faster than a tree of modules, runs the same from TypeScript sources
 * (no loader in the worker) and from the compiled package, and gives every plugin of a
 * worker one copy of TypeBox and the plugin API.
 */
export function workerProgram(): Promise<WorkerProgram> {
  workerCode ??= buildProgram().then(withCodeCache, (error) => {
    workerCode = undefined;
    throw error;
  });
  return workerCode;
}

/** A worker's program, and V8's code cache of it (compiled once here, so each worker skips most of its parse and compile). */
export interface WorkerProgram {
  readonly source: string;
  readonly filename: string;
  readonly cache: Buffer;
  /**
   * What a worker is sent: the source's bytes (it is one-byte text) then the cache, in
   * shared memory, so that starting a worker copies neither through a message.
   */
  readonly shared: { readonly bytes: SharedArrayBuffer; readonly sourceLength: number; readonly filename: string };
}

function withCodeCache(source: string): WorkerProgram {
  const filename = "context-host-plugin-worker.js";
  // Latin-1 bytes carry one-byte text exactly; a wider character would be cut (and make V8
  // hold the text at two bytes a character in every worker).
  if (/[\u0100-\uffff]/.test(source)) throw new Error("the plugin worker's program is not one-byte text");
  const cache = new vm.Script(source, { filename }).createCachedData();
  const bytes = new SharedArrayBuffer(source.length + cache.length);
  const view = Buffer.from(bytes);
  view.write(source, 0, "latin1");
  cache.copy(view, source.length);
  return { source, filename, cache, shared: { bytes, sourceLength: source.length, filename } };
}

/**
 * What a worker runs first: the program, compiled with its code cache, both read from the
 * shared bytes. The reference to them is dropped from `workerData` before the program runs
 * (no plugin code can reach memory every worker reads) and the rest are a function's locals,
 * not a script's top-level constants that would live as long as the worker: V8 keeps the
 * program's text for lazy compilation and nothing else.
 */
const bootstrap = `"use strict";
(() => {
  const data = process.getBuiltinModule("node:worker_threads").workerData;
  const { bytes, sourceLength, filename } = data.program;
  data.program = undefined;
  const all = Buffer.from(bytes);
  const source = all.toString("latin1", 0, sourceLength);
  const script = new (process.getBuiltinModule("node:vm").Script)(source, { filename, cachedData: all.subarray(sourceLength) });
  // A shared worker runs it again in each plugin's realm (decision 185).
  if (data.shared) data.script = script;
  script.runInThisContext();
})();
`;

const withoutGlob: esbuild.Plugin = {
  name: "without-fast-glob",
  setup(build) {
    build.onResolve({ filter: /^fast-glob$/ }, () => ({ path: "fast-glob", namespace: "without-glob" }));
    build.onLoad({ filter: /.*/, namespace: "without-glob" }, () => ({
      contents: "module.exports = () => { throw new Error('loadModules is not available in a plugin worker'); };",
      loader: "js",
    }));
  },
};

async function buildProgram(): Promise<string> {
  return bundleWorkerProgram(entryFile);
}

/**
 * A worker entry as one script for `new Worker(program, { eval: true })`: bundled with what
 * it imports except `external` packages, which its `require` resolves from the entry's folder.
 */
export async function bundleWorkerProgram(entry: string, external: readonly string[] = []): Promise<string> {
  // Cached on disk (decision 092): the build's inputs are the files esbuild read and this
  // file, whose options and wrapper below shape the program.
  const key = JSON.stringify({ entry, external, esbuild: esbuild.version, node: process.version });
  return cachedProgram(key, async () => {
    const built = await buildWorkerProgram(entry, external);
    return { text: built.program, inputs: [...built.inputs, fileURLToPath(import.meta.url)] };
  });
}

async function buildWorkerProgram(entry: string, external: readonly string[]): Promise<{ program: string; inputs: string[] }> {
  const result = await esbuild.build({
    entryPoints: [entry],
    bundle: true,
    write: false,
    format: "cjs",
    platform: "node",
    target: "node20",
    logLevel: "silent",
    external: [...external],
    // The worker's own `require` (for a plugin's packages) resolves from the entry's folder.
    define: { "import.meta.url": "__workerEntryUrl" },
    // awilix needs fast-glob only for `loadModules`, which the worker never calls; leaving
    // it out takes a third off the program and ~35 ms off every worker's start (decision 060).
    plugins: [withoutGlob],
    // Without comments and whitespace the program is a quarter smaller, and one-byte: a
    // comment's single non-Latin-1 character made V8 keep the whole text, in every worker,
    // as a two-byte string (1 MiB instead of 0.4). Names stay (error names come from them).
    minifyWhitespace: true,
    minifySyntax: true,
    legalComments: "none",
    metafile: true,
  });
  const body = result.outputFiles[0]?.text;
  if (body === undefined) throw new Error("esbuild produced no worker program");
  const url = new URL(`file://${entry}`).href;
  // Inputs are relative to the working folder; a plugin's namespaced ones (`without-glob:`) are no files.
  const inputs = Object.keys(result.metafile.inputs)
    .filter((input) => !input.includes(":"))
    .map((input) => path.resolve(input));
  const program = `"use strict";
const __workerEntryUrl = ${JSON.stringify(url)};
(function (require, module, exports) {
${body}
})(globalThis.__contextHostRealm?.require ?? process.getBuiltinModule("node:module").createRequire(${JSON.stringify(entry)}), { exports: {} }, {});
`;
  return { program, inputs };
}

/** A request the worker did not answer in time; the worker was stopped. */
export class PluginWorkerDeadlineExceeded extends PluginWorkerStopped {
  readonly ms: number;
  constructor(options: {
    readonly what: string;
    readonly ms: number;
    readonly phase?: DiagnosticPhase | undefined;
    readonly key?: string | undefined;
  }) {
    super({
      reason: `${options.what} missed its deadline of ${options.ms} ms; the plugin's worker was stopped`,
      phase: options.phase,
      key: options.key,
    });
    this.ms = options.ms;
  }
}

export interface PluginWorkerOptions {
  readonly init: Omit<WorkerInit, "progress">;
  /** Heap limit of the worker's old generation, MiB. */
  readonly heapMb: number;
  /** How long the worker may take to start, ms (default 10 s); plugin deadlines start after it. */
  readonly startDeadlineMs?: number;
  /** A line the plugin logged or printed. */
  log(level: "info" | "warn" | "error", message: string): void;
  /** The worker ended without being asked to; `stopped` says why. */
  onStopped(stopped: PluginWorkerStopped): void;
}

interface Pending {
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: unknown) => void;
  readonly timer: NodeJS.Timeout;
  readonly describe: Describe;
}

/**
 * A worker's young generation, MiB: V8 makes it three semi-spaces, so this is one of 1 MiB,
 * V8's smallest. With the 32 MiB it had (semi-spaces growing to ~10 MiB) a plugin that allocates as
 * it loads grew its worker's young generation by a resident MiB or more that an idle
 * worker kept (measured, decision 061); a smaller one only scavenges more often.
 */
const youngGenerationMb = 3;

/** Longest line of worker output kept (longer lines are cut). */
const maxLogLine = 4096;

type Log = PluginWorkerOptions["log"];

/**
 * One worker thread of plugin code: a plugin's own (the default), or one that several
 * plugins share, each in its own realm (decision 185). Whatever stops it stops every plugin on it.
 */
class PluginThread {
  readonly #worker: Worker;
  readonly #heapMb: number;
  readonly isShared: boolean;
  /** The plugins placed on it, opened or opening, by tag (a dedicated thread's one: tag 0). */
  readonly plugins = new Map<number, PluginWorker>();
  #nextTag = 1;
  /** Set once it is being ended (stopped or closed): nothing more is placed on it. */
  isEnding = false;
  #lastError: unknown;
  #markReady: (() => void) | undefined;
  readonly #onCulprits: ((plugins: readonly string[]) => void) | undefined;
  readonly ready: Promise<void>;
  readonly exited: Promise<void>;

  constructor(
    program: WorkerProgram,
    options: {
      readonly heapMb: number;
      readonly data: object;
      readonly startDeadlineMs?: number | undefined;
      readonly log: Log;
      /** Plugins that were running when it stopped or crashed (decision 185: they run alone from then on). */
      readonly onCulprits?: (plugins: readonly string[]) => void;
    },
  ) {
    this.#heapMb = options.heapMb;
    this.isShared = "shared" in options.data;
    this.#onCulprits = options.onCulprits;
    this.#worker = new Worker(bootstrap, {
      eval: true,
      workerData: { ...options.data, program: program.shared },
      resourceLimits: {
        maxOldGenerationSizeMb: options.heapMb,
        maxYoungGenerationSizeMb: Math.min(youngGenerationMb, options.heapMb / 4),
      },
      execArgv: [],
      env: { ...process.env },
      stdout: true,
      stderr: true,
      name: this.isShared ? "context-host plugins" : "context-host plugin",
    });
    this.#forward(this.#worker.stdout, "info", options.log);
    this.#forward(this.#worker.stderr, "warn", options.log);
    this.#worker.on("message", (message: WorkerReply) => this.#receive(message));
    this.#worker.on("error", (error) => {
      this.#lastError = error;
    });
    // A message the host's thread cannot read (too deep for its stack, say) ends the worker.
    this.#worker.on("messageerror", (error) => {
      this.#lastError = new Error(`it sent a message the host could not read (${messageOf(error)})`);
      void this.#worker.terminate().catch(() => {});
    });
    const ms = options.startDeadlineMs ?? 10_000;
    const timer = setTimeout(() => {
      this.#stopAll(`the plugin's worker did not start within ${ms} ms`);
    }, ms);
    this.ready = new Promise((resolve) => {
      this.#markReady = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    this.exited = new Promise((resolve) => {
      this.#worker.once("exit", (code) => {
        clearTimeout(timer);
        this.isEnding = true;
        this.#stopAll(this.#why(code));
        resolve();
      });
    });
  }

  get threadId(): number {
    return this.#worker.threadId;
  }

  /** Places a plugin here; returns its tag (a dedicated thread: 0). */
  place(plugin: PluginWorker): number {
    const tag = this.isShared ? this.#nextTag++ : 0;
    this.plugins.set(tag, plugin);
    return tag;
  }

  post(message: object): void {
    this.#worker.postMessage(message);
  }

  /** Stops the thread because `culprit` missed a deadline: the culprit with `stopped`, its thread mates with why. */
  stopFor(culprit: PluginWorker, stopped: PluginWorkerStopped, missedId: number): void {
    this.isEnding = true;
    culprit.stop(stopped, missedId);
    if (this.isShared && culprit.plugin !== undefined) this.#onCulprits?.([culprit.plugin]);
    this.#stopAll(
      `the worker this plugin shares with others (decision 185) was stopped for another plugin, ${culprit.plugin}: ${stopped.reason}`,
      true,
    );
    void this.#worker.terminate().catch(() => {});
  }

  /** A plugin leaves: a shared thread closes its realm (the thread ends with its last plugin); a dedicated one ends. */
  async release(plugin: PluginWorker, tag: number): Promise<void> {
    const isLast = [...this.plugins.values()].every((other) => other === plugin || other.stopped !== undefined);
    if (!this.isShared || isLast || plugin.isBusy) {
      // A realm whose code is still running cannot be closed alone: its thread mates restart (decision 185).
      if (this.isShared && !isLast) this.#stopAll("a plugin it shares its worker with was stopped while its code ran", true);
      this.isEnding = true;
      await this.#worker.terminate().catch(() => {});
      await this.exited;
      return;
    }
    this.plugins.delete(tag);
    plugin.stop(new PluginWorkerStopped({ reason: "the plugin was closed" }));
    try {
      this.post({ type: "close", tag } satisfies ThreadRequest);
    } catch {
      // The thread is ending anyway.
    }
  }

  /** Stops every plugin on it not stopped yet, each with `reason` and where its own code was. */
  #stopAll(reason: string, forAnother = false) {
    // Plugins running code when the thread stopped are its culprits; when one is known (or it
    // stopped `forAnother`), its mates stop for it (collateral: no stop of their own), else
    // every plugin's stop counts.
    const culprits = [...this.plugins.values()].flatMap((plugin) =>
      plugin.stopped === undefined && plugin.running().phase !== undefined && plugin.plugin !== undefined ? [plugin.plugin] : [],
    );
    for (const plugin of this.plugins.values()) {
      if (plugin.stopped !== undefined) {
        plugin.stop(plugin.stopped);
        continue;
      }
      const running = plugin.running();
      const isCollateral = this.isShared && (forAnother || culprits.length > 0) && running.phase === undefined;
      plugin.stop(new PluginWorkerStopped({ reason, ...running, isCollateral }));
    }
    if (this.isShared && culprits.length > 0) this.#onCulprits?.(culprits);
    if (!this.isEnding) {
      this.isEnding = true;
      void this.#worker.terminate().catch(() => {});
    }
  }

  #receive(message: WorkerReply) {
    if (typeof message !== "object" || message === null) return;
    if (message.type === "ready") {
      this.#markReady?.();
      return;
    }
    this.plugins.get(this.isShared ? Number(message.tag) : 0)?.receive(message);
  }

  #why(code: number): string {
    const error = this.#lastError as (Error & { code?: string }) | undefined;
    const worker = this.isShared ? `the worker the plugin shares with others` : `the plugin's worker`;
    if (error?.code === "ERR_WORKER_OUT_OF_MEMORY") return `${worker} ran out of memory (heap limit ${this.#heapMb} MiB)`;
    if (error !== undefined) return `${worker} crashed: ${messageOf(error)}`;
    return `${worker} exited with code ${code}`;
  }

  #forward(stream: NodeJS.ReadableStream | null, level: "info" | "warn", log: Log) {
    if (stream === null) return;
    let buffered = "";
    stream.setEncoding("utf8");
    stream.on("data", (chunk: string) => {
      buffered += chunk;
      const lines = buffered.split("\n");
      buffered = (lines.pop() ?? "").slice(0, maxLogLine);
      for (const line of lines) log(level, line.slice(0, maxLogLine));
    });
  }
}

/**
 * One plugin's transport to its worker thread, the default: the thread is its own, or (beyond
 * the bound of decision 185) shared, the plugin in its own realm there. Once stopped it stays
 * stopped: a restart is a new `PluginWorker`.
 */
export class PluginWorker implements PluginTransport {
  readonly #thread: PluginThread;
  readonly #tag: number;
  readonly #cells: Int32Array;
  readonly #progress: SharedArrayBuffer;
  readonly #pending = new Map<number, Pending>();
  readonly #options: PluginWorkerOptions;
  /** The plugin's file: named to its thread mates when it stops a shared worker. */
  readonly plugin: string | undefined;
  #nextId = 1;
  #stopped: PluginWorkerStopped | undefined;
  #isOpen = false;
  #isClosing = false;

  private constructor(thread: PluginThread, progressCells: SharedArrayBuffer, options: PluginWorkerOptions, plugin?: string) {
    this.#thread = thread;
    this.#progress = progressCells;
    this.#cells = new Int32Array(progressCells);
    this.#options = options;
    this.plugin = plugin;
    this.#tag = thread.place(this);
  }

  /**
   * Starts a worker of its own (its program is built on first use) and resolves once it is
   * ready to serve requests; rejects with `PluginWorkerStopped` if it ends first or does not
   * start within `options.startDeadlineMs` (no plugin code runs before that).
   */
  static async start(options: PluginWorkerOptions): Promise<PluginWorker> {
    const program = await workerProgram();
    const progressCells = newProgressCells();
    const data = { ...(options.init satisfies Omit<WorkerInit, "progress">), progress: progressCells };
    const thread = new PluginThread(program, {
      heapMb: options.heapMb,
      data,
      startDeadlineMs: options.startDeadlineMs,
      log: options.log,
    });
    const worker = new PluginWorker(thread, progressCells, options);
    await Promise.race([thread.ready, thread.exited]);
    if (worker.#stopped !== undefined) throw worker.#stopped;
    worker.#isOpen = true;
    return worker;
  }

  /** Opens the plugin's realm on a shared thread (decision 185); rejects with `PluginWorkerStopped` like `start`. */
  static async open(thread: PluginThread, options: PluginWorkerOptions & { readonly plugin: string }): Promise<PluginWorker> {
    const worker = new PluginWorker(thread, newProgressCells(), options, options.plugin);
    const init = { ...options.init, progress: worker.#progress };
    await Promise.race([thread.ready, thread.exited]);
    const ms = options.startDeadlineMs ?? 10_000;
    try {
      await worker.#send({ type: "open", init }, ms, () => ({ what: "opening the plugin's realm", phase: "evaluate" }));
    } catch (error) {
      await worker.terminate();
      throw error instanceof PluginWorkerStopped ? error : new PluginWorkerStopped({ reason: messageOf(error) });
    }
    worker.#isOpen = true;
    return worker;
  }

  /** The worker's thread id (the same across the reloads it serves). */
  get threadId(): number {
    return this.#thread.threadId;
  }

  /** Whether the worker has stopped (and why). */
  get stopped(): PluginWorkerStopped | undefined {
    return this.#stopped;
  }

  /** Resolves when its thread has ended. */
  get ended(): Promise<void> {
    return this.#thread.exited;
  }

  /** Whether a request of this plugin is waiting for its answer. */
  get isBusy(): boolean {
    return this.#pending.size > 0;
  }

  /**
   * Sends one request; resolves with the worker's result, rejects with `PluginWorkerFault`
   * (the worker answered with a fault), `PluginWorkerDeadlineExceeded` (no answer within `ms`: the
   * worker is stopped) or `PluginWorkerStopped` (the worker ended meanwhile).
   */
  request<T>(request: HostRequestBody, ms: number, describe: Describe): Promise<T> {
    return this.#send(request, ms, describe);
  }

  #send<T>(request: object, ms: number, describe: Describe): Promise<T> {
    if (this.#stopped !== undefined) return Promise.reject(this.#stopped);
    const id = this.#nextId++;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => this.#missed(id, ms), ms);
      this.#pending.set(id, { resolve: resolve as (value: unknown) => void, reject, timer, describe });
      try {
        this.#thread.post(this.#thread.isShared ? { ...request, id, tag: this.#tag } : { ...request, id });
      } catch (error) {
        clearTimeout(timer);
        this.#pending.delete(id);
        reject(new PluginWorkerStopped({ reason: `could not send to the plugin's worker: ${messageOf(error)}` }));
      }
    });
  }

  /** Stops the plugin's code at once (running or not) and waits until it ended. */
  async terminate(): Promise<void> {
    this.#isClosing = true;
    await this.#thread.release(this, this.#tag);
  }

  #missed(id: number, ms: number) {
    const pending = this.#pending.get(id);
    if (pending === undefined) return;
    const isThisRequest = Atomics.load(this.#cells, progress.request) === id;
    const code = Atomics.load(this.#cells, progress.phase);
    const running = isThisRequest && code > 0 ? (phaseCodes[code] as DiagnosticPhase | undefined) : undefined;
    const described = pending.describe(running, Atomics.load(this.#cells, progress.source));
    const missed = new PluginWorkerDeadlineExceeded({
      what: described.what,
      ms: described.ms ?? ms,
      phase: described.phase,
      key: described.key,
    });
    this.#thread.stopFor(this, missed, id);
  }

  /** A reply or a log line of this plugin's runner. */
  receive(message: WorkerReply) {
    if (message.type === "log") {
      if (typeof message.message === "string" && ["info", "warn", "error"].includes(message.level))
        this.#options.log(message.level, message.message.slice(0, maxLogLine));
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

  /** Which phase and source the plugin's code was in, from the progress cells and the request running. */
  running(): { phase?: DiagnosticPhase; key?: string | undefined } {
    const code = Atomics.load(this.#cells, progress.phase);
    const pending = this.#pending.get(Atomics.load(this.#cells, progress.request));
    if (code <= 0 || pending === undefined) return {};
    const described = pending.describe(phaseCodes[code] as DiagnosticPhase, Atomics.load(this.#cells, progress.source));
    return { phase: described.phase, key: described.key };
  }

  /** Stops this plugin's transport: `missedId`'s request first, then every other; reported once, unless it was closing. */
  stop(stopped: PluginWorkerStopped, missedId?: number) {
    const isFirst = this.#stopped === undefined;
    this.#stopped ??= stopped;
    const missed = missedId === undefined ? undefined : this.#pending.get(missedId);
    if (missed !== undefined) {
      this.#pending.delete(missedId as number);
      clearTimeout(missed.timer);
      missed.reject(stopped);
    }
    for (const [id, pending] of this.#pending) {
      clearTimeout(pending.timer);
      this.#pending.delete(id);
      pending.reject(this.#stopped);
    }
    // Before it was ready, a stop is the start's failure (the caller holds no worker yet).
    if (isFirst && this.#isOpen && !this.#isClosing) this.#options.onStopped(stopped);
  }
}

function newProgressCells(): SharedArrayBuffer {
  return new SharedArrayBuffer(progress.length * Int32Array.BYTES_PER_ELEMENT);
}

/**
 * Where plugins' code runs (decision 185): a worker of its own for each plugin up to
 * `dedicatedWorkers`, beyond them shared workers of up to `pluginsPerWorker` plugins, each in
 * its realm. A plugin that stopped a shared worker (a missed deadline, or running when it
 * crashed) gets a worker of its own from then on, so it cannot stop its mates again.
 */
export class PluginWorkers {
  readonly #limits: { readonly dedicatedWorkers: number; readonly pluginsPerWorker: number };
  #dedicated = 0;
  readonly #shared = new Set<PluginThread>();
  readonly #alone = new Set<string>();

  constructor(limits: { readonly dedicatedWorkers: number; readonly pluginsPerWorker: number }) {
    this.#limits = limits;
  }

  /** Starts `plugin`'s transport: a worker of its own, or a realm on a shared one. */
  async start(options: PluginWorkerOptions & { readonly plugin: string }): Promise<PluginWorker> {
    const { dedicatedWorkers, pluginsPerWorker } = this.#limits;
    if (this.#dedicated < dedicatedWorkers || pluginsPerWorker < 2 || this.#alone.has(options.plugin)) {
      this.#dedicated++;
      const started = PluginWorker.start(options);
      void started.then(
        (worker) => worker.ended.then(() => this.#dedicated--),
        () => this.#dedicated--,
      );
      return started;
    }
    // The program first: from here to placing the plugin nothing awaits, so plugins starting
    // together fill one shared thread before another is made.
    const program = await workerProgram();
    let thread = [...this.#shared].find((shared) => !shared.isEnding && shared.plugins.size < pluginsPerWorker);
    if (thread === undefined) {
      const created = new PluginThread(program, {
        heapMb: options.heapMb,
        data: { shared: true },
        startDeadlineMs: options.startDeadlineMs,
        log: options.log,
        onCulprits: (plugins) => {
          for (const plugin of plugins) this.#alone.add(plugin);
        },
      });
      this.#shared.add(created);
      void created.exited.then(() => this.#shared.delete(created));
      thread = created;
    }
    return PluginWorker.open(thread, options);
  }
}
/** The phases a worker's fault may name: those the progress cells track, and the checks of a definition. */
const faultPhases = new Set<string>([...phaseCodes.filter((phase) => phase !== "idle"), "config", "namespace"]);

/** A location as the worker sent it, if it is one. */
export function sanitizeLocation(location: unknown): Location | undefined {
  if (typeof location !== "object" || location === null) return undefined;
  const raw = location as Record<string, unknown>;
  if (typeof raw.file !== "string" || !Number.isInteger(raw.line) || !Number.isInteger(raw.column)) return undefined;
  const lineText = typeof raw.lineText === "string" ? raw.lineText.slice(0, 1000) : undefined;
  return {
    file: raw.file.slice(0, 4096),
    line: Number(raw.line),
    column: Number(raw.column),
    ...(lineText === undefined ? {} : { lineText }),
  };
}

/** A fault as the worker sent it, reduced to the fields and types a diagnostic has. */
function sanitizeFault(fault: unknown): WorkerFault {
  const raw = (typeof fault === "object" && fault !== null ? fault : {}) as Record<string, unknown>;
  const text = (value: unknown, max = 4096) => (typeof value === "string" ? value.slice(0, max) : undefined);
  const phase = typeof raw.phase === "string" && faultPhases.has(raw.phase) ? raw.phase : "load";
  const plugin = text(raw.plugin, 200);
  const key = text(raw.key, 500);
  const location = sanitizeLocation(raw.location);
  return {
    phase: phase as DiagnosticPhase,
    message: text(raw.message) ?? "the plugin's worker reported a fault without a message",
    ...(plugin === undefined ? {} : { plugin }),
    ...(key === undefined ? {} : { key }),
    ...(location === undefined ? {} : { location }),
  };
}
