// Starts proxy-child.ts, the context proxy in a process of its own from the compiled
// package (as users run `context-host proxy`), for the proxy benches; and bare-forwarder.ts,
// the least proxy that reads a request, to measure beside it.

import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { programArgs } from "../../test/support/compiled.ts";

/** What a proxy in its own process forwarded, reported when it stops. */
export interface ProxyChildReport {
  /** Requests not forwarded with context, or not relayed whole. */
  readonly errors: number;
  readonly withContext: number;
  /** Requests that carried a newly admitted update. */
  readonly updates: number;
  readonly firstError: string;
  /** Each request's boundary and its whole time in the proxy (ms), as its events told them. */
  readonly boundaryMs: readonly number[];
  readonly totalMs: readonly number[];
}

/** A context proxy started in a process of its own from the compiled package (proxy-child.ts). */
export interface ProxyChild {
  readonly url: string;
  readonly pid: number;
  /** The plugin sources it loaded. */
  readonly sources: number;
  stop(): Promise<ProxyChildReport>;
  /** Ends it at once (after a failure), reporting nothing. */
  kill(): void;
}

/** Starts proxy-child.ts on `folder` (its plugins) and `upstream`, as an installed package runs. */
export async function startProxyChild(folder: string, upstream: string): Promise<ProxyChild> {
  const profile =
    process.env.BENCH_PROXY_PROFILE === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_PROXY_PROFILE}`];
  const child = spawn(process.execPath, [...profile, ...programArgs("scripts/bench/proxy-child.ts"), folder, upstream], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream })[Symbol.asyncIterator]();
  const first = await lines.next();
  if (first.done === true) throw new Error("the proxy child exited before it listened");
  const { url, sources } = JSON.parse(first.value) as { url: string; sources: number };
  return {
    url,
    sources,
    pid: child.pid as number,
    stop: async () => {
      (child.stdin as NodeJS.WritableStream).end();
      const last = await lines.next();
      if (last.done === true) throw new Error("the proxy child exited without its report");
      return JSON.parse(last.value) as ProxyChildReport;
    },
    kill: () => {
      child.kill();
    },
  };
}

/** bare-forwarder.ts in a process of its own on `upstream` (the floor the proxy benches print beside the proxy). */
export async function startBareForwarder(upstream: string): Promise<{ url: string; stop(): void }> {
  const child = spawn(process.execPath, [...programArgs("scripts/bench/bare-forwarder.ts"), upstream], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  const url = await new Promise<string>((resolve, reject) => {
    child.once("exit", () => reject(new Error("the bare forwarder exited before it listened")));
    (child.stdout as NodeJS.ReadableStream).once("data", (data: Buffer) => resolve(String(data).trim()));
  });
  return { url, stop: () => (child.stdin as NodeJS.WritableStream).end() };
}
