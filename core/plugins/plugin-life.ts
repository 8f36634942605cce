// Owns where one plugin's life stands, its worker and its generations, as one state union
// whose transitions are pure functions. `HostedPlugin` holds the state and moves it only
// through these; a transition that cannot happen in the state given throws.

import type { Scope } from "../base/scope.ts";
import type { PluginBundle } from "./bundle.ts";
import type { LoadTimings } from "./events.ts";
import type { PluginLimits } from "./limits.ts";
import type { PluginTransport } from "./protocol.ts";

/**
 * A generation loaded into the runner, ready to be swapped in: closing its scope runs its disposers
 * there.
 */
export interface HostedGeneration {
  readonly name: string;
  readonly generation: number;
  readonly scope: Scope;
  readonly keys: readonly string[];
  /** What a restarted worker rebuilds it from (its config follows from its name). */
  readonly bundle: PluginBundle;
  /** `performance.now()` at the start of the load that built it, and when it was ready. */
  readonly startedAt: number;
  readonly readyAt: number;
  /** The steps' times, in hundredths of a ms. */
  readonly timings: Pick<LoadTimings, "bundleMs" | "evaluateMs" | "setupMs">;
}

/** A generation's sources' deadlines in ms, by key. */
export type Deadlines = ReadonlyMap<string, number>;

/** The generations set up in a running worker, each with its sources' deadlines. */
export type Living = ReadonlyMap<number, Deadlines>;

/** What loads and swaps leave. Every combination is legal: a failed reload keeps the active generation. */
export interface Generations {
  /** Generation numbers handed out so far. */
  readonly numbered: number;
  /** The generation swapped in, which a restarted worker rebuilds. */
  readonly active: HostedGeneration | undefined;
  /**
   * A generation a change overtook before its swap: the next load swaps it in if it bundles
   * the same content and the generation still lives in the worker (decision 195).
   */
  readonly overtaken: HostedGeneration | undefined;
  /**
   * Hash of the last bundle whose load's outcome stands (a final failure, or a generation the
   * plugin set kept): identical content is not loaded again.
   */
  readonly attemptedHash: string | undefined;
}

/** What every state holds besides its kind. */
interface Lived {
  readonly generations: Generations;
  /** When the worker stopped of its own accord, oldest first, within the crash window of the last stop. */
  readonly crashes: readonly number[];
  /** Loads in flight: a restart that comes due meanwhile waits for the last of them. */
  readonly loads: number;
  /** A restart came due while loads were in flight: the last of them asks for it again. */
  readonly isRestartDue: boolean;
  /** The last rebuild of the active generation in a fresh worker (it never rejects): a load waits for it. */
  readonly rebuild: Promise<void> | undefined;
}

export type PluginLife =
  /** A transport is starting: when the plugin is hosted, and when a request finds none running. */
  | (Lived & { readonly kind: "starting"; readonly transport: Promise<PluginTransport> })
  /** A transport runs, with the generations set up in it. */
  | (Lived & { readonly kind: "running"; readonly transport: PluginTransport; readonly living: Living })
  /** No transport (it stopped with no generation active, or failed to start): the next request starts one. */
  | (Lived & { readonly kind: "stopped" })
  /**
   * The transport stopped while a generation was active: after `backOffMs` a fresh one rebuilds
   * that generation, unless a load starts one first.
   */
  | (Lived & { readonly kind: "restarting"; readonly backOffMs: number })
  /** It stopped too often within the crash window: nothing restarts it until its file changes (a load). */
  | (Lived & { readonly kind: "disabled" })
  /** The plugin set let it go: nothing starts any more. */
  | (Lived & { readonly kind: "closed" });

/** The limits that decide what a stop leads to. */
export type CrashLimits = Pick<PluginLimits, "crashWindowMs" | "maxCrashes" | "backoffMs">;

/** A plugin just hosted: no transport yet, no generation. */
export const unstarted: PluginLife = Object.freeze({
  kind: "stopped",
  generations: Object.freeze({
    numbered: 0,
    active: undefined,
    overtaken: undefined,
    attemptedHash: undefined,
  }),
  crashes: Object.freeze([]),
  loads: 0,
  isRestartDue: false,
  rebuild: undefined,
});

/** What `life` holds besides its kind (and what its kind alone holds). */
function livedOf(life: PluginLife): Lived {
  const { generations, crashes, loads, isRestartDue, rebuild } = life;
  return { generations, crashes, loads, isRestartDue, rebuild };
}

function refused(transition: string, life: PluginLife): Error {
  return new Error(`a plugin's life cannot take "${transition}" in state ${life.kind}`);
}

// The worker

/**
 * A transport starts. Refused while one starts or runs (a running one that stopped aside)
 * and once closed. A disabled plugin starts one only for a load, which enabled it.
 */
export function startBegan(life: PluginLife, transport: Promise<PluginTransport>): PluginLife {
  const isRunning = liveTransport(life) !== undefined;
  if (life.kind === "starting" || life.kind === "closed" || isRunning) throw refused("start began", life);
  return { ...livedOf(life), kind: "starting", transport };
}

/** The transport started: it runs, with no generation set up in it yet. */
export function started(life: PluginLife, transport: PluginTransport): PluginLife {
  if (life.kind !== "starting") throw refused("started", life);
  return { ...livedOf(life), kind: "running", transport, living: new Map() };
}

/** The transport failed to start: the next request starts another. Once closed, the life stays closed. */
export function startFailed(life: PluginLife): PluginLife {
  if (life.kind === "closed") return life;
  if (life.kind !== "starting") throw refused("start failed", life);
  return { ...livedOf(life), kind: "stopped" };
}

/**
 * `transport` stopped at `at`. A stop of a transport not running (one replaced, or the life
 * closed) changes nothing. A stop of the plugin's own (not collateral: for another plugin of
 * its shared worker) counts within the crash window; with a generation active the plugin is
 * restarted after the back-off of its count, or disabled once the count reaches `maxCrashes`.
 */
export function stopped(
  life: PluginLife,
  transport: PluginTransport,
  stop: { readonly at: number; readonly isCollateral: boolean },
  limits: CrashLimits,
): PluginLife {
  if (life.kind !== "running" || life.transport !== transport) return life;
  const counted = stop.isCollateral ? life.crashes : [...life.crashes, stop.at];
  const crashes = counted.filter((at) => at >= stop.at - limits.crashWindowMs);
  const lived = { ...livedOf(life), crashes };
  if (life.generations.active === undefined) return { ...lived, kind: "stopped" };
  if (crashes.length >= limits.maxCrashes) return { ...lived, kind: "disabled" };
  const backOffMs = stop.isCollateral ? 0 : backOffAfter(crashes.length, limits);
  return { ...lived, kind: "restarting", backOffMs };
}

/** The wait before the restart after the `count`-th stop within the window: the last back-off repeats. */
function backOffAfter(count: number, limits: CrashLimits): number {
  const { backoffMs } = limits;
  return backoffMs[Math.min(count - 1, backoffMs.length - 1)] ?? 0;
}

/** A generation was set up in `transport`; one set up in a transport no longer running does not live. */
export function setUp(life: PluginLife, transport: PluginTransport, generation: number, deadlines: Deadlines): PluginLife {
  if (life.kind !== "running" || life.transport !== transport) return life;
  return { ...life, living: new Map([...life.living, [generation, deadlines]]) };
}

/** A living generation is disposed of in the worker. Refused for one that does not live. */
export function disposed(life: PluginLife, generation: number): PluginLife {
  if (life.kind !== "running" || !life.living.has(generation)) throw refused("disposed", life);
  const living = new Map(life.living);
  living.delete(generation);
  return { ...life, living };
}

/** The transport of a running life, unless it stopped aside (before the life heard of it). */
export function liveTransport(life: PluginLife): PluginTransport | undefined {
  return life.kind === "running" && life.transport.stopped === undefined ? life.transport : undefined;
}

/** The deadlines of `generation`'s sources if it is set up in the running worker. */
export function deadlinesOf(life: PluginLife, generation: number): Deadlines | undefined {
  return life.kind === "running" ? life.living.get(generation) : undefined;
}

/** Whether `generation` is set up in the running worker. */
export function lives(life: PluginLife, generation: number): boolean {
  return life.kind === "running" && life.living.has(generation);
}

/** The plugin set let the plugin go. */
export function closed(life: PluginLife): PluginLife {
  return { ...livedOf(life), kind: "closed" };
}

// Loads and restarts

/**
 * A load reached the worker's side; a disabled plugin is enabled again (its file changed), its
 * stops forgotten.
 */
export function loadBegan(life: PluginLife): PluginLife {
  const loads = life.loads + 1;
  if (life.kind === "disabled") return { ...livedOf(life), kind: "stopped", crashes: [], loads };
  return { ...life, loads };
}

/** A load ended. Refused with none in flight. */
export function loadEnded(life: PluginLife): PluginLife {
  if (life.loads === 0) throw refused("load ended", life);
  return { ...life, loads: life.loads - 1 };
}

/** Whether the last load in flight just ended with a restart due: the restart is asked for again. */
export function isRestartAsked(life: PluginLife): boolean {
  return life.loads === 0 && life.isRestartDue && life.kind !== "closed";
}

/**
 * A restart comes due: a back-off ended (the plugin has no transport now), or the loads it
 * waited for did. With loads in flight it waits for them again.
 */
export function restartDue(life: PluginLife): PluginLife {
  const isRestartDue = life.loads > 0;
  if (life.kind === "restarting") return { ...livedOf(life), kind: "stopped", isRestartDue };
  return { ...life, isRestartDue };
}

/** A rebuild of the active generation began: loads wait for it. */
export function rebuildBegan(life: PluginLife, rebuild: Promise<void>): PluginLife {
  return { ...life, rebuild };
}

// Generations

/** Generation number `generation` is handed out. Refused unless it follows the last one handed out. */
export function numbered(life: PluginLife, generation: number): PluginLife {
  if (generation <= life.generations.numbered) throw refused(`numbered ${generation}`, life);
  return withGenerations(life, { numbered: generation });
}

/** The outcome of loading the bundle with `hash` stands: identical content is not loaded again. */
export function attempted(life: PluginLife, hash: string): PluginLife {
  return withGenerations(life, { attemptedHash: hash });
}

/** The next load loads its bundle even if it is the content last attempted. */
export function attemptForgotten(life: PluginLife): PluginLife {
  return withGenerations(life, { attemptedHash: undefined });
}

/** `next` is the active generation now. */
export function swappedIn(life: PluginLife, next: HostedGeneration): PluginLife {
  return withGenerations(life, { active: next });
}

/** The active generation was retired: no generation is active, none is rebuilt. */
export function retired(life: PluginLife): PluginLife {
  return withGenerations(life, { active: undefined });
}

/** A change overtook `generation` before its swap: it is kept for the next load. */
export function overtook(life: PluginLife, generation: HostedGeneration): PluginLife {
  return withGenerations(life, { overtaken: generation });
}

/** The overtaken generation is no longer kept (the plugin set swaps it in or closes it). */
export function overtakenForgotten(life: PluginLife): PluginLife {
  return withGenerations(life, { overtaken: undefined });
}

function withGenerations(life: PluginLife, change: Partial<Generations>): PluginLife {
  return { ...life, generations: { ...life.generations, ...change } };
}
