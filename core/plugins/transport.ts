// Owns what carries the plugin runner's requests (decision 160): the interface both
// transports share, and the transport of `isolation: "none"`, the runner in the host's own
// thread (trusted first-party plugins, comparisons). The other one, a worker thread per
// plugin (beyond a bound, a realm on a shared one: decision 185), is `worker/plugin-worker.ts`.

import type { AwilixContainer } from "awilix";
import type { DiagnosticPhase } from "../base/diagnostics.ts";
import { ContextHostError } from "../base/errors.ts";
import type { ValueLimits } from "../system-context/prerendered.ts";
import { createPluginRunner, type PluginRunner } from "./runner.ts";
import { type HostRequestBody, progress, type WorkerFault } from "./worker/protocol.ts";

/** What a request was doing when its transport stopped, from the phase running and the source's index in the request. */
export type Describe = (
  phase: DiagnosticPhase | undefined,
  index: number,
) => {
  readonly what: string;
  readonly phase: DiagnosticPhase;
  readonly key?: string | undefined;
  /** The deadline to name, when it is not the request's (a loader's own). */
  readonly ms?: number | undefined;
};

/** The worker of a plugin stopped; `reason` says why, as a diagnostic will. */
export class PluginWorkerStopped extends ContextHostError {
  readonly reason: string;
  /** The phase and the source key the worker was running when it stopped, if any. */
  readonly phase: DiagnosticPhase | undefined;
  readonly key: string | undefined;
  /** Stopped for another plugin of a shared worker (decision 185): no stop of this plugin's own. */
  readonly isCollateral: boolean;
  constructor(options: {
    readonly reason: string;
    readonly phase?: DiagnosticPhase | undefined;
    readonly key?: string | undefined;
    readonly isCollateral?: boolean;
  }) {
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

/**
 * The runner in the host's own thread. Nothing can stop plugin code here, so the runner's
 * own deadlines (setup, loaders) and the host's around disposers are all there is; a plugin
 * that loops freezes the host. For trusted code only.
 */
export class InThreadTransport implements PluginTransport {
  readonly #runner: PluginRunner;
  readonly stopped = undefined;
  #nextId = 1;

  constructor(options: { readonly container: AwilixContainer; readonly limits: ValueLimits }) {
    this.#runner = createPluginRunner({ ...options, cells: new Int32Array(progress.length) });
  }

  async request<T>(request: HostRequestBody, _ms: number, _describe: Describe): Promise<T> {
    const reply = await this.#runner.serve({ ...request, id: this.#nextId++ });
    if (!reply.ok) throw new PluginWorkerFault({ fault: reply.fault });
    return reply.result as T;
  }

  async terminate(): Promise<void> {}
}
