// `npm run test:node`: `npm test` (type check, lint, every test) on each Node.js major the
// README promises besides the one installed (default 22 and 24; NODE_MAJORS="22" for one),
// one after the other. Not part of `npm test`: it downloads.
//
// Per major:
// - the `node` binary from npm (`node-<platform>-<arch>@<major>`), and better-sqlite3 with
//   the prebuilt binary for that major's ABI (`prebuild-install`, as its own install does: a
//   native module is built for one Node.js ABI), both kept in
//   node_modules/.cache/context-host/node/<major>/ between runs;
// - a copy of the project in a temp folder (the files git tracks and new ones it does not
//   ignore, in a repository of its own), whose node_modules links each of this project's
//   packages, better-sqlite3 excepted, which is that major's; removed after the run.
// The copy runs with that `node` first on PATH, so the tests' child processes, npm's and
// npx's scripts run on it too.
//
// Usage: npm run test:node [-- MOCHA ARGS...]   (npm run test:node -- --grep package)

import { execFileSync, spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readdirSync, rmSync, symlinkSync } from "node:fs";
import os from "node:os";
import path from "node:path";

const root = path.resolve(import.meta.dirname, "..");
const majors = (process.env.NODE_MAJORS ?? "22 24").split(/\s+/).filter(Boolean);
const cache = path.join(root, "node_modules", ".cache", "context-host", "node");
const binaryPackage = `node-${process.platform}-${process.arch}`;

/** The `node` binary of `major`, installed from npm into the cache once. */
function nodeOf(major) {
  const prefix = path.join(cache, major, "binary");
  const node = path.join(prefix, "node_modules", binaryPackage, "bin", "node");
  if (!existsSync(node)) {
    mkdirSync(prefix, { recursive: true });
    execFileSync("npm", ["install", "--prefix", prefix, "--no-save", "--no-audit", "--no-fund", `${binaryPackage}@${major}`], {
      stdio: "inherit",
    });
  }
  return node;
}

/** A fresh copy of the project for `node`, its better-sqlite3 built for that Node's ABI. */
function projectFor(major, node) {
  const project = path.join(os.tmpdir(), `context-host-node-${major}`);
  rmSync(project, { recursive: true, force: true });
  const files = execFileSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], {
    cwd: root,
    encoding: "utf8",
    maxBuffer: 16 << 20,
  });
  for (const file of files.split("\0").filter(Boolean)) {
    if (existsSync(path.join(root, file))) cpSync(path.join(root, file), path.join(project, file));
  }
  const modules = path.join(project, "node_modules");
  mkdirSync(modules);
  for (const entry of readdirSync(path.join(root, "node_modules"))) {
    if (entry !== "better-sqlite3" && entry !== ".cache")
      symlinkSync(path.join(root, "node_modules", entry), path.join(modules, entry));
  }
  const sqlite = path.join(modules, "better-sqlite3");
  const built = path.join(cache, major, "better-sqlite3");
  if (!existsSync(path.join(built, "build", "Release", "better_sqlite3.node"))) {
    rmSync(built, { recursive: true, force: true });
    const source = path.join(root, "node_modules", "better-sqlite3");
    for (const part of ["package.json", "lib", "binding.gyp", "src", "deps"]) {
      cpSync(path.join(source, part), path.join(built, part), { recursive: true });
    }
    // As its own install script does: the prebuilt binary, else a build from its sources
    // against the headers that come with the binary package (a minute or two, once).
    const version = execFileSync(node, ["--version"], { encoding: "utf8" }).trim().slice(1);
    const prebuilt = spawnSync(
      node,
      [path.join(root, "node_modules", "prebuild-install", "bin.js"), "--runtime", "node", "--target", version],
      { cwd: built, stdio: "inherit" },
    );
    if (prebuilt.status !== 0) {
      const gyp = process.env.npm_config_node_gyp;
      if (gyp === undefined) throw new Error("test:node: no prebuilt better-sqlite3 and no node-gyp: run it through npm");
      const headers = path.resolve(path.dirname(node), "..");
      // npm passes its own `nodedir` setting down (npm_config_nodedir): that Node's headers win over it.
      execFileSync(node, [gyp, "rebuild", "--release", `--nodedir=${headers}`, "--jobs", "2"], {
        cwd: built,
        stdio: "inherit",
        env: { ...process.env, npm_config_nodedir: headers },
      });
    }
  }
  symlinkSync(built, sqlite);
  execFileSync("git", ["init", "--quiet"], { cwd: project });
  execFileSync("git", ["add", "--all"], { cwd: project });
  return project;
}

const results = [];
for (const major of majors) {
  const node = nodeOf(major);
  const version = execFileSync(node, ["--version"], { encoding: "utf8" }).trim();
  process.stdout.write(`\n=== npm test on Node.js ${version} ===\n`);
  const project = projectFor(major, node);
  const env = { ...process.env, PATH: `${path.dirname(node)}${path.delimiter}${process.env.PATH}` };
  const run = spawnSync(node, ["scripts/test.mjs", ...process.argv.slice(2)], { cwd: project, env, stdio: "inherit" });
  results.push({ version, code: run.status ?? 1 });
  rmSync(project, { recursive: true, force: true });
}
process.stdout.write(
  `\n${results.map(({ version, code }) => `Node.js ${version}: ${code === 0 ? "passed" : `failed (exit ${code})`}`).join("\n")}\n`,
);
process.exitCode = results.some(({ code }) => code !== 0) ? 1 : 0;
