// Runs every `scripts/bench/*.bench.ts` in sorted order, each in its own child process
// (`node --expose-gc --import tsx <file>`; a compiled copy of this folder, as the tests
// run, runs its `.bench.js` files on plain Node), and streams their result lines to stdout.
// Exits non-zero if any bench failed: a non-zero exit, a signal, no result line, or a
// stdout line that is not a bench line (those go to stderr, marked).
//
// Usage: npm run bench [-- FILTER...]   (only files whose name contains a FILTER)

import { spawn } from "node:child_process";
import { readdirSync } from "node:fs";
import path from "node:path";
import { createInterface } from "node:readline";
import { isBenchLine } from "./measure.ts";

const benchDir = import.meta.dirname;
const projectRoot = path.resolve(benchDir, "../..");
/** `.ts` when run from source under tsx; `.js` in a compiled copy. */
const extension = path.extname(import.meta.filename);
const loader = extension === ".ts" ? ["--import", "tsx"] : [];

/** Runs one bench file; resolves with a failure reason, or `undefined` when it passed. */
function runBench(file: string): Promise<string | undefined> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ["--expose-gc", ...loader, path.join(benchDir, file)], {
      cwd: projectRoot,
      stdio: ["ignore", "pipe", "inherit"],
    });
    let results = 0;
    let malformed = 0;
    const lines = createInterface({ input: child.stdout, crlfDelay: Number.POSITIVE_INFINITY });
    lines.on("line", (line) => {
      if (isBenchLine(line)) {
        results++;
        process.stdout.write(`${line}\n`);
      } else if (line.trim() !== "") {
        malformed++;
        process.stderr.write(`[${file}] not a bench line: ${line}\n`);
      }
    });
    child.on("error", (error) => resolve(`could not start: ${error.message}`));
    // "close" fires after stdout has ended, so every line has been handled.
    child.on("close", (code, signal) => {
      if (signal !== null) resolve(`killed by ${signal}`);
      else if (code !== 0) resolve(`exited with code ${code}`);
      else if (malformed > 0) resolve(`printed ${malformed} line(s) that are not bench lines`);
      else if (results === 0) resolve("printed no bench line");
      else resolve(undefined);
    });
  });
}

async function main(filters: readonly string[]): Promise<number> {
  const all = readdirSync(benchDir)
    .filter((name) => name.endsWith(`.bench${extension}`))
    .sort();
  const files = filters.length === 0 ? all : all.filter((name) => filters.some((filter) => name.includes(filter)));
  if (files.length === 0) {
    process.stderr.write(
      `no bench file matches ${filters.map((f) => JSON.stringify(f)).join(" or ")}; have: ${all.join(", ")}\n`,
    );
    return 2;
  }
  const failures: string[] = [];
  for (const file of files) {
    const failure = await runBench(file);
    if (failure !== undefined) {
      failures.push(file);
      process.stderr.write(`[${file}] FAILED: ${failure}\n`);
    }
  }
  if (failures.length > 0) {
    process.stderr.write(`${failures.length} of ${files.length} bench(es) failed: ${failures.join(", ")}\n`);
    return 1;
  }
  return 0;
}

process.exitCode = await main(process.argv.slice(2));
