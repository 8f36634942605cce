// Bench `package-size`, metric `unpacked-bytes`: the unpacked size of the tarball
// `npm pack` makes (its `unpackedSize`; `prepack` builds dist/ first): the `files`
// allow-list (dist/ with its source maps, the TypeScript sources they map to, the program's
// bin/) plus README, LICENSE and package.json. Goal: only what users run or read ships, no
// tests, fixtures or benches (test/package/consumer.test.ts holds it); the figure is watched,
// not capped: readable JavaScript and maps cost bytes a user's debugging session is worth.
// BENCH_VERBOSE=1 prints the bytes of each kind of file.
//
// Baseline, in the same run: what the package shipped without an allow-list — every file
// git tracks (npm falls back to .gitignore), sources, tests, docs and configs, as the
// tarball was before the package was built (`git ls-files`, sizes on disk).
//
// One measurement of each: both are deterministic for a given checkout.

import { execFileSync } from "node:child_process";
import { statSync } from "node:fs";
import path from "node:path";
import { emit } from "./measure.ts";
import { runBenchProcess } from "./plugin-fixtures.ts";

const bench = "package-size";
const projectRoot = path.resolve(import.meta.dirname, "../..");

/** `npm pack --dry-run --json`'s report: what the tarball would hold, unpacked. */
function packedSize(): { unpackedSize: number; entryCount: number; files: { path: string; size: number }[] } {
  const stdout = execFileSync("npm", ["pack", "--dry-run", "--json"], {
    cwd: projectRoot,
    encoding: "utf8",
    maxBuffer: 16 << 20,
    stdio: ["ignore", "pipe", "ignore"],
  });
  // `prepack` prints the build's output before npm's JSON.
  const [report] = JSON.parse(stdout.slice(stdout.indexOf("[\n"))) as ReturnType<typeof packedSize>[];
  if (report === undefined) throw new Error(`npm pack printed no report: ${stdout}`);
  return report;
}

/** Bytes of every file git tracks (what npm packs when there is no `files` list). */
function trackedSize(): number {
  const files = execFileSync("git", ["ls-files", "-z"], { cwd: projectRoot, encoding: "utf8" }).split("\0").filter(Boolean);
  return files.reduce((sum, file) => {
    try {
      return sum + statSync(path.join(projectRoot, file)).size;
    } catch {
      return sum; // deleted in the work tree, not yet in the index
    }
  }, 0);
}

async function main(): Promise<void> {
  const packed = packedSize();
  if (process.env.BENCH_VERBOSE === "1") {
    const kinds = new Map<string, number>();
    for (const file of packed.files) {
      const kind = file.path.startsWith("dist/")
        ? `dist/*${/(\.d\.ts\.map|\.d\.ts|\.js\.map|\.js)$/.exec(file.path)?.[1]}`
        : file.path.split("/")[0];
      kinds.set(kind as string, (kinds.get(kind as string) ?? 0) + file.size);
    }
    const lines = [...kinds].map(([kind, bytes]) => `  ${kind}: ${bytes} B`).join("\n");
    process.stderr.write(`[${bench}] ${packed.entryCount} files in the tarball\n${lines}\n`);
  }
  emit({ bench, metric: "unpacked-bytes", value: packed.unpackedSize, unit: "B", baseline: trackedSize() });
}

await runBenchProcess(bench, main);
