// Owns the messages between the host and a plugin's runner (decision 060) and what carries
// them (decision 160): plain data (code and settings in; values, texts, faults out), none of
// it trusted by the host before its arrival checks. The transports are the runner in the
// host's own thread (`runner.ts`) and a plugin's worker thread (`plugin-worker.ts`).

import type { Diagnostic, DiagnosticPhase } from "../base/diagnostics.ts";
import { ContextHostError } from "../base/errors.ts";
import type { ValueLimits } from "../system-context/prerendered.ts";
import type { Evaluable } from "./evaluate.ts";
import type { Location } from "./locations.ts";

/** What a plugin's runner is started with (a dedicated worker's `workerData`); values beyond its limits are not sent. */
export interface WorkerInit extends ValueLimits {
  /** The host's working folder: `api.services.location`. */
  readonly location: string;
  /** `system`: the worker reads its own clock; `host`: the host's clock reading sent with each request. */
  readonly clock: "system" | "host";
  /** Shared progress cells: what the runner runs now (`progress`). */
  readonly progress: SharedArrayBuffer;
}

/** Indices into the progress cells (an `Int32Array`): the request served (0: none), its phase code, the source's index in it. */
export const progress = { request: 0, phase: 1, source: 2, length: 3 } as const;

/** The phase codes of the progress cells: a phase's index here. */
export const phaseCodes = ["idle", "evaluate", "setup", "load", "value", "baseline", "update", "removed", "dispose"] as const;

/** Each phase's code, its index in `phaseCodes`, without a search. */
export const phaseCode = Object.fromEntries(phaseCodes.map((phase, code) => [phase, code])) as Readonly<
  Record<(typeof phaseCodes)[number], number>
>;

/** Why a request failed, as a diagnostic will say it (and the plugin, when the runner knows it). */
export type WorkerFault = Pick<Diagnostic, "phase" | "message" | "key"> &
  Partial<Pick<Diagnostic, "plugin">> & { readonly location?: Location };

/** A rendering made in the runner. */
export type WorkerText =
  | { readonly ok: true; readonly text: string }
  | { readonly ok: false; readonly reason: string; readonly location?: Location };

/**
 * What the runner observed of each source asked, as its code in `Observed.kinds` (a code not
 * set: `unavailable`). `unchanged`: the encoded value is the `stored` one the source was asked
 * with, and the one of the observation the host said it holds (`held`): the host has its texts,
 * nothing was rendered. `ask-again`: asked with a held value not sent, the runner no longer had
 * that observation's value: ask with the value. `present`: a value whose texts the host does
 * not hold, sent in `Observed.present`.
 */
export const observationCodes = { unavailable: 0, unchanged: 1, absent: 2, "ask-again": 3, present: 4 } as const;

/** A source observed with a value whose texts the host does not hold: the value, rendered. */
export interface PresentObservation {
  readonly value: unknown;
  /** Numbers this observation: a later request says it holds its texts by this number. */
  readonly number: number;
  readonly baseline: WorkerText;
  readonly removed?: WorkerText;
  /** Against the `stored` value asked with, when the value differs from it: whether it decodes, and the update text. */
  readonly previous?: { readonly decodes: boolean; readonly update?: WorkerText };
}

/** What the host asks a runner; `evaluate`'s `reserved`: the namespaces its plugin may not take. */
export type HostRequest = { readonly id: number; readonly generation: number } & (
  | ({ readonly type: "evaluate"; readonly reserved: readonly string[] } & Evaluable)
  | { readonly type: "activate"; readonly config: unknown; readonly now: number; readonly setupDeadlineMs: number }
  | {
      readonly type: "observe";
      readonly env: { readonly location: string; readonly sessionId?: string };
      readonly now: number;
      readonly deadlineMs: number;
      /**
       * The sources asked for, by column (a boundary asks for many: columns of plain values
       * cost the transport far less than an object per source). `keys`: left out when they
       * are every source of the generation in the order `setup` declared them. `stored`: the
       * admitted values sent, by index. `held[i]`: the number of the last observation of the
       * source in this env whose texts the host holds (0: none); held with no stored value
       * sent, the admitted value is that observation's.
       */
      readonly keys?: readonly string[];
      readonly stored: ReadonlyArray<readonly [index: number, value: unknown]>;
      readonly held: Float64Array;
    }
  | { readonly type: "dispose" }
);

/** A request before the transport numbers it. */
export type HostRequestBody = HostRequest extends infer R ? (R extends unknown ? Omit<R, "id"> : never) : never;

/** A runner's answer to one request. */
export type RunnerReply = { readonly ok: false; readonly fault: WorkerFault } | { readonly ok: true; readonly result: unknown };

export type WorkerReply = (
  | ({ readonly type: "reply"; readonly id: number } & RunnerReply)
  | { readonly type: "log"; readonly level: "info" | "warn" | "error"; readonly message: string }
  /** Sent once, when the worker's own code has loaded: deadlines of requests start after it. */
  | { readonly type: "ready" }
) & {
  /** In a shared worker (decision 185): the plugin's realm that sent it. */
  readonly tag?: number;
};

/** What a shared worker is sent: a plugin's requests tagged with its realm, and the opening and closing of realms. */
export type ThreadRequest =
  | (HostRequest & { readonly tag: number })
  | { readonly type: "open"; readonly id: number; readonly tag: number; readonly init: WorkerInit }
  | { readonly type: "close"; readonly tag: number };

/** What a shared worker gives the program it runs in a plugin's realm; the program sets `serve`. */
export interface RealmHooks {
  readonly init: WorkerInit;
  /** Sends a reply or a log line, tagged with the realm. */
  post(reply: WorkerReply): void;
  /** Node's built-in modules, `node:vm` compiling into this realm. */
  require(id: string): unknown;
  serve?: (request: HostRequest) => void;
}

/** The results of `evaluate`, `activate` (the generation's sources) and `observe` (`Observed`). */
export type Evaluated = { readonly name: string };
export type Activated = { readonly sources: readonly { readonly key: string; readonly deadlineMs?: number }[] };

/**
 * The result of `observe`, by column as its request is: `kinds[i]`, the code of the i-th
 * source asked (`observationCodes`); `present`, the present ones in the order of their
 * sources; the faults met. An unchanged source is sent as its code alone.
 */
export interface Observed {
  readonly kinds: Uint8Array;
  readonly present: readonly PresentObservation[];
  readonly faults: readonly WorkerFault[];
}

/**
 * What a request was doing when its transport stopped, from the phase running and the source's index in the request;
 * `ms`: the deadline to name, when it is not the request's (a loader's own).
 */
export type Describe = (
  phase: DiagnosticPhase | undefined,
  index: number,
) => Pick<WorkerFault, "phase" | "key"> & { readonly what: string; readonly ms?: number | undefined };

/** The worker of a plugin stopped; `reason` says why, as a diagnostic will. */
export class PluginWorkerStopped extends ContextHostError {
  readonly reason: string;
  /** The phase and the source key the worker was running when it stopped, if any. */
  readonly phase: DiagnosticPhase | undefined;
  readonly key: string | undefined;
  /** Stopped for another plugin of a shared worker (decision 185): no stop of this plugin's own. */
  readonly isCollateral: boolean;
  constructor(options: { readonly reason: string } & Partial<Pick<PluginWorkerStopped, "phase" | "key" | "isCollateral">>) {
    super(options.reason);
    this.reason = options.reason;
    this.phase = options.phase;
    this.key = options.key;
    this.isCollateral = options.isCollateral ?? false;
  }
}

/** A request the runner answered with a fault. */
export class PluginWorkerFault extends ContextHostError {
  readonly fault: WorkerFault;
  constructor(options: { readonly fault: WorkerFault }) {
    super(options.fault.message);
    this.fault = options.fault;
  }
}

/** Carries requests to one plugin's runner. Once stopped it stays stopped: a restart is a new transport. */
export interface PluginTransport {
  /** Whether the transport has stopped (and why). */
  readonly stopped: PluginWorkerStopped | undefined;
  /**
   * Sends one request; resolves with the runner's result, rejects with `PluginWorkerFault`
   * (the runner answered with a fault) or `PluginWorkerStopped` (the transport stopped first,
   * or the answer missed `ms` where the transport can stop the runner).
   */
  request<T>(request: HostRequestBody, ms: number, describe: Describe): Promise<T>;
  /** Stops the transport at once and waits until it ended. */
  terminate(): Promise<void>;
}

/** The phases a worker's fault may name. */
const faultPhases = new Set<string>([...phaseCodes.filter((phase) => phase !== "idle"), "config", "namespace"]);

/** A string the worker sent, cut to `max` code units. */
const text = (value: unknown, max: number) => (typeof value === "string" ? value.slice(0, max) : undefined);

/** A location as the worker sent it, if it is one. */
export function sanitizeLocation(location: unknown): Location | undefined {
  const raw = (typeof location === "object" && location !== null ? location : {}) as Record<string, unknown>;
  const file = text(raw.file, 4096);
  if (file === undefined || !Number.isInteger(raw.line) || !Number.isInteger(raw.column)) return undefined;
  const lineText = text(raw.lineText, 1000);
  return { file, line: Number(raw.line), column: Number(raw.column), ...(lineText === undefined ? {} : { lineText }) };
}

/** A fault as the worker sent it, reduced to the fields and types a diagnostic has. */
export function sanitizeFault(fault: unknown): WorkerFault {
  const raw = (typeof fault === "object" && fault !== null ? fault : {}) as Record<string, unknown>;
  const phase = typeof raw.phase === "string" && faultPhases.has(raw.phase) ? raw.phase : "load";
  const plugin = text(raw.plugin, 200);
  const key = text(raw.key, 500);
  const location = sanitizeLocation(raw.location);
  return {
    phase: phase as DiagnosticPhase,
    message: text(raw.message, 4096) ?? "the plugin's worker reported a fault without a message",
    ...(plugin === undefined ? {} : { plugin }),
    ...(key === undefined ? {} : { key }),
    ...(location === undefined ? {} : { location }),
  };
}
