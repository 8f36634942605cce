// Owns the inside of a plugin's worker (decision 060): it evaluates each generation the
// host sends (a fresh CommonJS module, so old generations stay collectable), runs
// `setup`, and serves observations — loaders, codecs and renderers — and disposers.
// Whatever plugin code does here (a loop, an exit, a changed prototype, a leaked timer)
// stays in this thread; the host checks everything this file sends.

import v8 from "node:v8";
import vm from "node:vm";
import { parentPort, workerData } from "node:worker_threads";
import { asValue, createContainer } from "awilix";
import { withinDeadline } from "../../base/deadline.ts";
import type { DiagnosticPhase } from "../../base/diagnostics.ts";
import { messageOf } from "../../base/errors.ts";
import type { Scope } from "../../base/scope.ts";
import { absent, type Json, unavailable } from "../../system-context/index.ts";
import { isSameJson } from "../../system-context/json.ts";
import { type Source, SourceCodec } from "../../system-context/source.ts";
import type { PluginSource } from "../define.ts";
import { evaluateBundle, locationsOf } from "../evaluate.ts";
import { ActivationFailed, activateGeneration, pluginOf } from "../generation.ts";
import type { BundleLocations, Location } from "../locations.ts";
import {
  type Activated,
  type Evaluated,
  type HostRequest,
  type Observed,
  phaseCodes,
  progress,
  type WorkerFault,
  type WorkerInit,
  type WorkerMemory,
  type WorkerObservation,
  type WorkerReply,
  type WorkerText,
} from "./protocol.ts";

const port = parentPort;
if (port === null) throw new Error("core/plugins/worker/entry runs inside a plugin worker only");
const init = workerData as WorkerInit;
const cells = new Int32Array(init.progress);
// Taken before any plugin code runs: a plugin cannot swap them for its own.
const post = port.postMessage.bind(port);
const { now: dateNow } = Date;
const { freeze } = Object;

let hostNow = dateNow();
const clock = { now: init.clock === "system" ? () => dateNow() : () => hostNow };
const send = (level: "info" | "warn" | "error") => (message: string) => {
  try {
    post({ type: "log", level, message: String(message) } satisfies WorkerReply);
  } catch {
    // A message that cannot be sent is dropped.
  }
};
const container = createContainer();
container.register({
  clock: asValue(freeze(clock)),
  logger: asValue(freeze({ info: send("info"), warn: send("warn"), error: send("error") })),
  location: asValue(init.location),
});

/** One generation living in this worker. */
interface Living {
  readonly exports: Record<string, unknown>;
  readonly locations: BundleLocations;
  name: string;
  scope?: Scope;
  sources?: Map<string, { readonly source: PluginSource; readonly codec: SourceCodec }>;
}

const generations = new Map<number, Living>();

function mark(request: number, phase: DiagnosticPhase | "idle", source = 0) {
  Atomics.store(cells, progress.request, request);
  Atomics.store(cells, progress.phase, Math.max(0, phaseCodes.indexOf(phase)));
  Atomics.store(cells, progress.source, source);
}

function reply(id: number, result: unknown) {
  try {
    post({ type: "reply", id, ok: true, result } satisfies WorkerReply);
  } catch (error) {
    fail(id, { phase: "value", message: `the worker could not send its result: ${messageOf(error)}` });
  }
}

function fail(id: number, fault: WorkerFault) {
  post({ type: "reply", id, ok: false, fault } satisfies WorkerReply);
}

function faultOf(error: unknown, locations: BundleLocations | undefined, phase: DiagnosticPhase): WorkerFault {
  const failure = error instanceof ActivationFailed ? error : undefined;
  const location = locate(locations, failure?.cause ?? error);
  return {
    phase: failure?.phase ?? phase,
    message: messageOf(error),
    ...(failure?.plugin === undefined ? {} : { plugin: failure.plugin }),
    ...(failure?.key === undefined ? {} : { key: failure.key }),
    ...(location === undefined ? {} : { location }),
  };
}

function locate(locations: BundleLocations | undefined, error: unknown): Location | undefined {
  try {
    const found = locations?.locate(error);
    return found === undefined ? undefined : { ...found };
  } catch {
    return undefined;
  }
}

async function evaluate(request: Extract<HostRequest, { type: "evaluate" }>): Promise<void> {
  const bundle = {
    entry: request.entry,
    code: request.code,
    baseDir: request.baseDir,
    hash: "",
    inputs: [],
    ...(request.ownDependenciesFirst === true ? { ownDependenciesFirst: true } : {}),
  };
  const locations = locationsOf(bundle, request.generation);
  mark(request.id, "evaluate");
  let exports: Record<string, unknown>;
  try {
    exports = evaluateBundle(bundle, request.generation);
  } catch (error) {
    fail(request.id, {
      ...faultOf(error, locations, "evaluate"),
      phase: "evaluate",
      message: `module code threw: ${messageOf(error)}`,
    });
    return;
  }
  try {
    const plugin = pluginOf(exports, new Set(request.reserved));
    generations.set(request.generation, { exports, locations, name: plugin.name });
    reply(request.id, { name: plugin.name } satisfies Evaluated);
  } catch (error) {
    fail(request.id, faultOf(error, locations, "evaluate"));
  }
}

async function activate(request: Extract<HostRequest, { type: "activate" }>): Promise<void> {
  hostNow = request.now;
  const living = generations.get(request.generation);
  if (living === undefined) {
    fail(request.id, { phase: "setup", message: `generation ${request.generation} was not evaluated in this worker` });
    return;
  }
  mark(request.id, "setup");
  try {
    const activated = await activateGeneration({
      exports: living.exports,
      generation: request.generation,
      container,
      settings: { [living.name]: request.config },
      setupDeadlineMs: request.setupDeadlineMs,
      reservedNamespaces: new Set(),
    });
    living.scope = activated.scope;
    living.sources = new Map(
      activated.sources.map((source) => [
        source.key,
        { source, codec: new SourceCodec(source as unknown as Source, Number.POSITIVE_INFINITY) },
      ]),
    );
    const sources = activated.sources.map((source) =>
      typeof source.deadlineMs === "number" ? { key: source.key, deadlineMs: source.deadlineMs } : { key: source.key },
    );
    reply(request.id, { sources } satisfies Activated);
  } catch (error) {
    generations.delete(request.generation);
    fail(request.id, faultOf(error, living.locations, "setup"));
  } finally {
    mark(0, "idle");
  }
}

function text(
  id: number,
  index: number,
  codec: SourceCodec,
  renderer: "baseline" | "update" | "removed",
  current: unknown,
  previous: unknown,
  locations: BundleLocations,
): WorkerText {
  mark(id, renderer, index);
  try {
    const rendering = codec.render(renderer, current, previous);
    if (rendering.ok) return { ok: true, text: rendering.text };
    const location = locate(locations, rendering.error);
    const reason = rendering.error.message.replace(/^Context Source "[^"]*": renderer "[a-z]+" /, "");
    return location === undefined ? { ok: false, reason } : { ok: false, reason, location };
  } catch (error) {
    return { ok: false, reason: `threw: ${messageOf(error)}` };
  }
}

async function observe(request: Extract<HostRequest, { type: "observe" }>): Promise<void> {
  hostNow = request.now;
  const living = generations.get(request.generation);
  const sources = living?.sources;
  if (living === undefined || sources === undefined) {
    fail(request.id, { phase: "load", message: `generation ${request.generation} is not active in this worker` });
    return;
  }
  const env = freeze({ ...request.env });
  const faults: WorkerFault[] = [];
  const { locations } = living;
  // Every loader starts before any is awaited, as in the host: sources are observed concurrently.
  const loads = request.sources.map(({ key }, index) => {
    const held = sources.get(key);
    if (held === undefined) return Promise.resolve(unavailable as unknown);
    mark(request.id, "load", index);
    try {
      const loaded = held.source.load(env);
      if (!(loaded instanceof Promise)) return Promise.resolve(loaded as unknown);
      return withinDeadline(() => loaded, held.source.deadlineMs ?? request.deadlineMs, `loader ${key}`);
    } catch (error) {
      return Promise.reject(error);
    }
  });
  mark(request.id, "idle");
  const settled = await Promise.allSettled(loads);
  const observations: WorkerObservation[] = settled.map((outcome, index) => {
    const { key, stored } = request.sources[index] as { key: string; stored?: unknown };
    const held = sources.get(key);
    if (held === undefined) return { kind: "unavailable" };
    if (outcome.status === "rejected") {
      faults.push({ ...faultOf(outcome.reason, locations, "load"), phase: "load", key });
      return { kind: "unavailable" };
    }
    const loaded = outcome.value;
    if (loaded === unavailable) return { kind: "unavailable" };
    if (loaded === absent) return { kind: "absent" };
    const { codec, source } = held;
    let value: Json;
    mark(request.id, "value", index);
    try {
      value = codec.plain(codec.encode(loaded));
      const oversize = oversized(value);
      if (oversize !== undefined) throw new Error(`loaded value rejected: ${oversize}`);
    } catch (error) {
      faults.push({ ...faultOf(error, locations, "value"), phase: "value", key });
      return { kind: "unavailable" };
    }
    const baseline = text(request.id, index, codec, "baseline", loaded, undefined, locations);
    const removed =
      source.removed === undefined ? undefined : text(request.id, index, codec, "removed", loaded, undefined, locations);
    let previous: { decodes: boolean; update?: WorkerText } | undefined;
    if (stored !== undefined) {
      mark(request.id, "value", index);
      let decoded: { readonly value: unknown } | undefined;
      try {
        decoded = codec.decodeStored(stored as Json);
      } catch {
        decoded = undefined;
      }
      previous = { decodes: decoded !== undefined };
      if (decoded !== undefined && !isSameJson(stored as Json, value)) {
        previous.update = text(request.id, index, codec, "update", loaded, decoded.value, locations);
      }
    }
    return {
      kind: "present",
      value,
      baseline,
      ...(removed === undefined ? {} : { removed }),
      ...(previous === undefined ? {} : { previous }),
    };
  });
  mark(0, "idle");
  reply(request.id, { observations, faults } satisfies Observed);
}

async function dispose(request: Extract<HostRequest, { type: "dispose" }>): Promise<void> {
  const living = generations.get(request.generation);
  generations.delete(request.generation);
  mark(request.id, "dispose");
  try {
    await living?.scope?.close();
    reply(request.id, null);
  } catch (error) {
    fail(request.id, { phase: "dispose", message: messageOf(error) });
  } finally {
    mark(0, "idle");
  }
}

/**
 * Why a value must not be sent, if it must not: deeper than the limit (a deep enough value
 * cannot even be read by the host's thread) or larger (a rough count of its JSON text).
 */
function oversized(value: Json): string | undefined {
  let left = init.maxValueBytes;
  const pending: Array<[Json, number]> = [[value, 0]];
  while (pending.length > 0) {
    const [item, depth] = pending.pop() as [Json, number];
    if (typeof item === "string") left -= item.length + 3;
    else if (item === null || typeof item !== "object") left -= 8;
    else {
      if (depth >= init.maxDepth) return `nested deeper than the limit of ${init.maxDepth}`;
      left -= 3;
      if (Array.isArray(item)) for (const inner of item) pending.push([inner, depth + 1]);
      else
        for (const key of Object.keys(item)) {
          left -= key.length + 4;
          pending.push([item[key] as Json, depth + 1]);
        }
    }
    if (left < 0) return `larger than the limit of ${init.maxValueBytes} bytes`;
  }
  return undefined;
}

let collect: (() => void) | undefined;

function memory(request: Extract<HostRequest, { type: "memory" }>) {
  let collected = false;
  try {
    if (collect === undefined) {
      v8.setFlagsFromString("--expose-gc");
      collect = vm.runInNewContext("gc") as () => void;
    }
    collect();
    collected = true;
  } catch {
    collected = false;
  }
  reply(request.id, { heapUsed: v8.getHeapStatistics().used_heap_size, collected } satisfies WorkerMemory);
}

port.on("message", (request: HostRequest) => {
  switch (request.type) {
    case "evaluate":
      void evaluate(request);
      return;
    case "activate":
      void activate(request);
      return;
    case "observe":
      void observe(request);
      return;
    case "dispose":
      void dispose(request);
      return;
    case "memory":
      memory(request);
      return;
  }
});
// The host starts its requests' deadlines from here: a worker's start-up (slow on a loaded
// machine) never counts against a plugin's module, setup or loader deadline.
post({ type: "ready" } satisfies WorkerReply);
