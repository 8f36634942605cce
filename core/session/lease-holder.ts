// Owns what an in-flight lease says about its holder (decision 177): the machine, the
// process (its pid and start time) and the runtime, so that a runtime finding a lease held
// by a process of this machine that no longer runs can take the session over at once
// instead of waiting for the lease to expire.

import { randomUUID } from "node:crypto";
import { readFileSync, readlinkSync } from "node:fs";
import os from "node:os";

/** Who holds a lease: which machine, which process on it, and which runtime in that process. */
export interface LeaseHolder {
  /** Host name, boot id and PID namespace (`-` where unknown): processes with the same `machine` see the same PIDs. */
  readonly machine: string;
  readonly pid: number;
  /** When the process started, as the OS counts it (Linux: clock ticks since boot); `-`: unknown. */
  readonly started: string;
  /** The runtime within the process. */
  readonly runtime: string;
}

/** What the OS says of a process: whether it runs, and when it started if that can be read. */
export interface ProcessState {
  readonly isRunning: boolean;
  readonly started?: string;
}

function firstLine(read: () => string): string {
  try {
    return read().trim().split("\n")[0]?.trim() || "-";
  } catch {
    return "-";
  }
}

/** This machine as lease holders name it: processes on it share one PID space. */
export function thisMachine(): string {
  const boot = firstLine(() => readFileSync("/proc/sys/kernel/random/boot_id", "utf8"));
  // The PID namespace: two containers with one host name and one kernel still have their own PIDs.
  const namespace = firstLine(() => readlinkSync("/proc/self/ns/pid")).replace(/[^0-9]/g, "") || "-";
  return `${os.hostname().replace(/\s+/g, "") || "-"}:${boot}:${namespace}`;
}

/**
 * Whether process `pid` runs, and its start time where the OS tells it: on Linux from
 * `/proc/<pid>/stat` (field 22; a zombie counts as gone), elsewhere `process.kill(pid, 0)`.
 */
export function probeProcess(pid: number): ProcessState {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code === "ENOENT" && isProcMounted()) return { isRunning: false };
    return { isRunning: isSignalable(pid) };
  }
  // The command name (field 2) is in parentheses and may hold spaces and parentheses: count from the last ")".
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const state = fields[0];
  if (state === "Z" || state === "X") return { isRunning: false };
  const started = fields[19];
  return started === undefined || started === "" ? { isRunning: true } : { isRunning: true, started };
}

function isProcMounted(): boolean {
  try {
    readFileSync("/proc/self/stat");
    return true;
  } catch {
    return false;
  }
}

function isSignalable(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it runs, as another user.
    return (error as { code?: unknown }).code !== "ESRCH";
  }
}

/** The holder string of a lease: readable in the store, parsed by `parseHolder`. */
export function formatHolder(holder: LeaseHolder): string {
  return `machine=${holder.machine} pid=${holder.pid} started=${holder.started} runtime=${holder.runtime}`;
}

/** A holder string of `formatHolder`'s shape, or `undefined` (an older runtime's id, another store's). */
export function parseHolder(text: string): LeaseHolder | undefined {
  const match = /^machine=(\S+) pid=([1-9]\d*) started=(\S+) runtime=(\S+)$/.exec(text);
  if (match === null) return undefined;
  const [, machine, pid, started, runtime] = match as unknown as [string, string, string, string, string];
  return { machine, pid: Number(pid), started, runtime };
}

/** A new runtime's holder string: this machine, this process, a fresh runtime id. */
export function newLeaseHolder(): string {
  return formatHolder({
    machine: thisMachine(),
    pid: process.pid,
    started: probeProcess(process.pid).started ?? "-",
    runtime: randomUUID(),
  });
}

/**
 * Whether the holder of a lease is known to be gone: it ran on this machine, and its
 * process no longer runs or its PID now belongs to a process that started at another time.
 * A holder of another machine, or one this cannot read, is never taken for gone.
 */
export function isHolderGone(
  text: string,
  probe: (pid: number) => ProcessState = probeProcess,
  machine: string = thisMachine(),
): boolean {
  const holder = parseHolder(text);
  if (holder === undefined || holder.machine !== machine) return false;
  const state = probe(holder.pid);
  if (!state.isRunning) return true;
  return holder.started !== "-" && state.started !== undefined && state.started !== holder.started;
}
