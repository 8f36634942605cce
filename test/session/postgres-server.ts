// A throwaway PostgreSQL server for tests: a data folder in a temp folder, `pg_ctl start`
// on a free local port (127.0.0.1 only, trust auth, socket in the folder), stopped and
// removed at the end. With DATABASE_URL set, that server is used instead. As root (CI),
// the server runs as the `postgres` user, as PostgreSQL requires.
//
// The data folder is a copy of one `initdb` made once per machine, user and PostgreSQL
// version (kept in the temp folder): `initdb` costs ~1 s of CPU alone and 3-6 s beside a
// test run, a copy 0.15 s. Every command runs without blocking the test process, whose
// other tests' timers keep running meanwhile.

import { execFile, execFileSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, statSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { promisify } from "node:util";

const run = promisify(execFile);

export interface PostgresServer {
  /** A `postgres://` URL of a database the tests own. */
  readonly url: string;
  /** The same database through the server's Unix socket, when the tests started the server. */
  readonly socketUrl?: string;
  stop(): void;
  /** Kills the server at once (as a crash would) and starts it again on the same port; absent for DATABASE_URL. */
  readonly crash?: { kill(): Promise<void>; start(): Promise<void> };
}

/** Where `initdb` and `pg_ctl` are: on PATH, or Debian's versioned folder. */
function binaries(): { initdb: string; pgCtl: string } | undefined {
  const onPath = (name: string) =>
    (process.env.PATH ?? "")
      .split(path.delimiter)
      .filter((folder) => folder !== "")
      .map((folder) => path.join(folder, name))
      .find((file) => existsSync(file));
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

type As = (command: string, args: string[]) => Promise<unknown>;

/**
 * A data folder `initdb` made, to copy: made on first use, and a second process that wants
 * it meanwhile waits for the first's instead of making its own. Its folder is named by the
 * binary's path and modification time, so another PostgreSQL gets a template of its own.
 */
async function template(initdb: string, as: As, isRoot: boolean): Promise<string> {
  const stamp = `${initdb.replace(/[^A-Za-z0-9]+/g, "-")}-${Math.round(statSync(initdb).mtimeMs)}`;
  const target = path.join(os.tmpdir(), `context-host-pg-template-${process.getuid?.() ?? "user"}-${stamp}`);
  const data = path.join(target, "data");
  const lock = `${target}.lock`;
  for (const startedAt = Date.now(); !existsSync(data); ) {
    try {
      mkdirSync(lock);
    } catch {
      // Another process is making it; a lock older than a minute is left from a killed run.
      const lockedAt = statSync(lock, { throwIfNoEntry: false })?.mtimeMs ?? Date.now();
      if (Date.now() - lockedAt > 60_000) rmSync(lock, { recursive: true, force: true });
      if (Date.now() - startedAt > 120_000) throw new Error(`waited 2 minutes for ${lock} to go`);
      await sleep(100);
      continue;
    }
    const fresh = mkdtempSync(`${target}-making-`);
    try {
      if (existsSync(data)) continue; // made while this process waited for the lock
      if (isRoot) chmodSync(fresh, 0o777);
      await as(initdb, [
        "-D",
        path.join(fresh, "data"),
        "-U",
        "contexthost",
        "--auth=trust",
        "--no-sync",
        "-E",
        "UTF8",
        "--locale=C",
      ]);
      chmodSync(fresh, 0o755);
      renameSync(fresh, target);
    } finally {
      rmSync(fresh, { recursive: true, force: true });
      rmSync(lock, { recursive: true, force: true });
    }
  }
  return data;
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
  const as: As = (command, args) => (isRoot ? run("runuser", ["-u", "postgres", "--", command, ...args]) : run(command, args));
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
  const stopArgs = ["-D", data, "-m", "immediate", "-w", "stop"];
  const kill = async () => {
    await as(found.pgCtl, stopArgs);
  };
  try {
    // `cp -a` as the server's user: the copy keeps the template's modes, which PostgreSQL checks.
    await as("cp", ["-a", await template(found.initdb, as, isRoot), data]);
    await start();
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    const stderr = (error as { stderr?: Buffer }).stderr?.toString().trim();
    return { reason: `could not start PostgreSQL: ${stderr || (error as Error).message}` };
  }
  return {
    url: `postgres://contexthost@127.0.0.1:${port}/postgres`,
    socketUrl: `postgres://contexthost@localhost:${port}/postgres?host=${encodeURIComponent(dir)}`,
    crash: {
      kill,
      start: async () => {
        await start();
      },
    },
    // Synchronous: it runs in the process's `exit` handler.
    stop() {
      try {
        if (isRoot) execFileSync("runuser", ["-u", "postgres", "--", found.pgCtl, ...stopArgs], { stdio: "pipe" });
        else execFileSync(found.pgCtl, stopArgs, { stdio: "pipe" });
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

/**
 * Declares `body`'s suites inside one whose `before` starts the shared server. Without a
 * server they are skipped (issue 16), except under CI, which always has one (.ci/run
 * installs PostgreSQL): there a missing server is a failure. The server is not started with
 * a top-level await: tsx loads a test file that has one as an ES module, and with it a
 * second copy of every module the other test files share (2.4 s of CPU for each such file).
 */
export function describeWithPostgres(title: string, body: (server: () => PostgresServer) => void): void {
  let server: PostgresServer | undefined;
  describe(title, () => {
    before(async function () {
      this.timeout(120_000);
      const started = await sharedPostgres();
      if ("reason" in started) {
        if (process.env.CI) throw new Error(started.reason);
        process.stderr.write(`skipped: ${title} needs a PostgreSQL server (issue 16): ${started.reason}\n`);
        this.skip();
      }
      server = started;
    });
    body(() => {
      if (server === undefined) throw new Error(`${title}: no PostgreSQL server was started`);
      return server;
    });
  });
}
