// Test support: an example package of examples/ (with its own package.json) in a temp
// project as a user would have it, `context-host` resolving to this project's sources (the
// `context-host-source` condition) and every other package to this project's node_modules.
// It type-checks the example's program as a consumer's TypeScript would and runs it with tsx.

import { execFile } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, "../..");

export interface ExampleProject {
  /** The example's folder inside the temp project. */
  readonly folder: string;
  /** `tsc` output on the example's program (strict, NodeNext): empty when it type-checks. */
  typeCheck(): Promise<string>;
  /** Runs the program with tsx in the example's folder; its stdout. */
  start(env?: NodeJS.ProcessEnv): Promise<string>;
  remove(): void;
}

/**
 * Copies `examples/<name>` (and the folders of examples/ named in `alongside`) into a temp
 * project; `program` is the file `npm start` runs.
 */
export function exampleProject(name: string, program: string, alongside: readonly string[] = []): ExampleProject {
  const project = mkdtempSync(path.join(os.tmpdir(), `${name}-example-`));
  const modules = path.join(project, "node_modules");
  mkdirSync(modules);
  for (const entry of readdirSync(path.join(root, "node_modules"))) {
    if (!entry.startsWith(".")) symlinkSync(path.join(root, "node_modules", entry), path.join(modules, entry));
  }
  symlinkSync(root, path.join(modules, "context-host"));
  const skip = (source: string) => !source.includes(".context-host") && !source.includes("node_modules");
  cpSync(path.join(root, "examples", name), path.join(project, name), { recursive: true, filter: skip });
  for (const other of alongside) cpSync(path.join(root, "examples", other), path.join(project, other), { recursive: true });
  writeFileSync(path.join(project, "package.json"), JSON.stringify({ type: "module", private: true }));
  writeFileSync(
    path.join(project, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: {
        module: "NodeNext",
        target: "ES2023",
        strict: true,
        noEmit: true,
        skipLibCheck: true,
        customConditions: ["context-host-source"],
        allowImportingTsExtensions: true,
        types: ["node"],
      },
      files: [`${name}/${program}`],
    }),
  );
  const folder = path.join(project, name);
  return {
    folder,
    async typeCheck() {
      const tsc = path.join(root, "node_modules/typescript/bin/tsc");
      const outcome = await run(process.execPath, [tsc, "-p", ".", "--singleThreaded"], { cwd: project }).catch(
        (error: { stdout?: string }) => ({ stdout: error.stdout ?? String(error) }),
      );
      return outcome.stdout;
    },
    async start(env = process.env) {
      const args = ["--conditions=context-host-source", "--import", "tsx", program];
      return (await run(process.execPath, args, { cwd: folder, env })).stdout;
    },
    remove: () => rmSync(project, { recursive: true, force: true }),
  };
}
