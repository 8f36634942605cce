// `npm test`: the type check (`tsc --noEmit`), the lint (Biome) and every test (mocha,
// two files at a time), all three at once. The tests spend much of their time waiting
// on timers and child processes, so the checks run in that idle time instead of before
// it (decision 091). The tests' output is printed as it comes, the checks' after the
// tests (a failed check's in full); the exit code is the first non-zero one, else 0.
//
// Usage: node scripts/test.mjs [MOCHA ARGS...]   (npm test -- --grep X)

import { spawn } from "node:child_process";
import { chmodSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";

const root = path.resolve(import.meta.dirname, "..");
const require = createRequire(import.meta.url);
const bin = (name, file) => path.join(path.dirname(require.resolve(`${name}/package.json`)), file);

/** Runs a command; resolves with its exit code and, unless `live`, its output. */
function run(label, command, args, live) {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: root, stdio: live ? "inherit" : ["ignore", "pipe", "pipe"] });
    let output = "";
    if (!live) {
      child.stdout.setEncoding("utf8").on("data", (chunk) => {
        output += chunk;
      });
      child.stderr.setEncoding("utf8").on("data", (chunk) => {
        output += chunk;
      });
    }
    child.on("error", (error) => resolve({ label, code: 1, output: `${label} could not start: ${error.message}\n` }));
    child.on("close", (code, signal) => resolve({ label, code: code ?? (signal === null ? 1 : 128), output }));
  });
}

function report({ label, code, output }) {
  process.stdout.write(`\n> ${label}: ${code === 0 ? "passed" : `failed (exit ${code})`}\n${code === 0 ? "" : output}`);
  return code;
}

/**
 * The slowest files (each several seconds of child processes), started first so that
 * neither of the two test processes is left running one of them alone at the end.
 */
const slowest = [
  "test/package/consumer.test.ts",
  "test/package/clone.test.ts",
  "test/plugins/isolation.test.ts",
  "test/conformance/check.test.ts",
  "test/conformance/pairing.test.ts",
  "test/mcp/mcp-sources.test.ts",
  "test/docs/doc-blocks.test.ts",
  "test/engine/example.test.ts",
  "test/cli/dashboard-example.test.ts",
  "test/plugins/hot-reload.test.ts",
  "test/plugins/worker-lifecycle.test.ts",
  "test/session/crash/crash.test.ts",
];
const files = readdirSync(path.join(root, "test"), { recursive: true, encoding: "utf8" })
  .map((file) => path.posix.join("test", file.split(path.sep).join("/")))
  .filter((file) => file.endsWith(".test.ts") && !file.endsWith(".long.test.ts"))
  .sort();
const ordered = [...slowest.filter((file) => files.includes(file)), ...files.filter((file) => !slowest.includes(file))];

const checks = [
  // One thread: by default tsc starts four checkers, which on two cores shared with the
  // tests cost 13 s of CPU against 5 s single-threaded, for a second less of its own time.
  // Incremental, its state kept in node_modules/.cache (gone with `npm ci`): it checks again
  // only what changed since the last run and what depends on it (1 s instead of 4 when little has).
  run("typecheck (tsc --noEmit -p . --singleThreaded --incremental)", process.execPath, [
    bin("typescript", "bin/tsc"),
    ...["--noEmit", "-p", ".", "--singleThreaded", "--incremental"],
    ...["--tsBuildInfoFile", path.join(root, "node_modules", ".cache", "context-host", "typecheck.tsbuildinfo")],
  ]),
  run("lint (biome check .)", process.execPath, [bin("@biomejs/biome", "bin/biome"), "check", "."]),
];
// The test processes share one compiled copy of the sources for their child processes
// (test/support/compiled.ts), built by the first that needs it, removed at the end.
const shared = mkdtempSync(path.join(os.tmpdir(), "context-host-test-run-"));
chmodSync(shared, 0o755);
process.env.CONTEXT_HOST_TEST_COMPILED = path.join(shared, "compiled");
const mocha = run(
  "tests (mocha)",
  process.execPath,
  // The options of .mocharc.json, with the files in the order above.
  [
    bin("mocha", "bin/mocha.js"),
    "--no-config",
    ...["--require", "tsx", "--extension", "ts", "--exit", "--timeout", "10000"],
    ...["--parallel", "--jobs", process.env.CONTEXT_HOST_TEST_JOBS ?? "3"],
    ...process.argv.slice(2),
    ...ordered,
  ],
  true,
);
const tests = await mocha;
rmSync(shared, { recursive: true, force: true });
const codes = [tests.code, ...(await Promise.all(checks)).map(report)];
process.exitCode = codes.find((code) => code !== 0) ?? 0;
