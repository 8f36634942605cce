// A throwaway PostgreSQL server for tests: `initdb` in a temp folder, `pg_ctl start` on a
// free local port (127.0.0.1 only, trust auth, socket in the folder), stopped and removed
// at the end. With DATABASE_URL set, that server is used instead. As root (CI), the
// server runs as the `postgres` user, as PostgreSQL requires.

import { execFileSync } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";

export interface PostgresServer {
  /** A `postgres://` URL of a database the tests own. */
  readonly url: string;
  stop(): void;
  /** Kills the server at once (as a crash would) and starts it again on the same port; absent for DATABASE_URL. */
  readonly crash?: { kill(): void; start(): void };
}

/** Where `initdb` and `pg_ctl` are: on PATH, or Debian's versioned folder. */
function binaries(): { initdb: string; pgCtl: string } | undefined {
  const onPath = (name: string) => {
    try {
      return execFileSync("sh", ["-c", `command -v ${name}`], { encoding: "utf8" }).trim() || undefined;
    } catch {
      return undefined;
    }
  };
  const initdb = onPath("initdb");
  const pgCtl = onPath("pg_ctl");
  if (initdb !== undefined && pgCtl !== undefined) return { initdb, pgCtl };
  const root = "/usr/lib/postgresql";
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root).sort((a, b) => Number(b) - Number(a));
  for (const version of versions) {
    const bin = path.join(root, version, "bin");
    if (existsSync(path.join(bin, "initdb"))) return { initdb: path.join(bin, "initdb"), pgCtl: path.join(bin, "pg_ctl") };
  }
  return undefined;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as net.AddressInfo).port;
      server.close(() => resolve(port));
    });
  });
}

/** Starts a server, or says why none can be started (`reason`). */
export async function startPostgres(): Promise<PostgresServer | { readonly reason: string }> {
  if (process.env.DATABASE_URL) return { url: process.env.DATABASE_URL, stop() {} };
  const found = binaries();
  if (found === undefined) return { reason: "PostgreSQL is not installed (apt-get install -y postgresql; .ci/run does it)" };
  const isRoot = process.getuid?.() === 0;
  const as = (command: string, args: string[]) =>
    isRoot
      ? execFileSync("runuser", ["-u", "postgres", "--", command, ...args], { stdio: "pipe" })
      : execFileSync(command, args, { stdio: "pipe" });
  const dir = mkdtempSync(path.join(os.tmpdir(), "context-host-pg-"));
  const data = path.join(dir, "data");
  if (isRoot) {
    chmodSync(dir, 0o777);
  }
  const port = await freePort();
  const start = () =>
    as(found.pgCtl, [
      "-D",
      data,
      "-l",
      path.join(dir, "server.log"),
      "-o",
      `-p ${port} -k ${dir} -h 127.0.0.1 -c fsync=off -c full_page_writes=off`, // fsync off: a killed server keeps every commit (the OS has it), only an OS crash would lose some
      "-w",
      "start",
    ]);
  const kill = () => as(found.pgCtl, ["-D", data, "-m", "immediate", "-w", "stop"]);
  try {
    as(found.initdb, ["-D", data, "-U", "contexthost", "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C"]);
    start();
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    const stderr = (error as { stderr?: Buffer }).stderr?.toString().trim();
    return { reason: `could not start PostgreSQL: ${stderr || (error as Error).message}` };
  }
  return {
    url: `postgres://contexthost@127.0.0.1:${port}/postgres`,
    crash: { kill, start },
    stop() {
      try {
        as(found.pgCtl, ["-D", data, "-m", "immediate", "-w", "stop"]);
      } catch {
        // Already gone.
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

let shared: Promise<PostgresServer | { readonly reason: string }> | undefined;

/**
 * One server for every test file of a run (starting one takes a few seconds): started on
 * first use, stopped when the process exits. Tests that restart it (`crash`) leave it running.
 */
export function sharedPostgres(): Promise<PostgresServer | { readonly reason: string }> {
  shared ??= startPostgres().then((server) => {
    if (!("reason" in server)) process.once("exit", () => server.stop());
    return server;
  });
  return shared;
}
