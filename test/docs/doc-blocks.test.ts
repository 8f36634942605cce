// Doc tests (decision 120): every ```ts and ```js block of README.md and docs/*.md runs as
// printed. Each document gets a working folder of its own in a temp project where
// `context-host` is this project: `tsc` type-checks every TypeScript block against the
// sources (NodeNext, strict, the project's settings), then each block runs on plain `node`
// against the compiled copy (test/support/compiled.ts), in document order, as the note
// before it says (test/docs/code-blocks.ts): a program must exit 0 with nothing on stderr
// (so a plugin problem the host prints fails it), a test file must pass under mocha, a
// file (a plugin) is saved where the text says before anything runs. A block that calls a
// model API meets a fake `fetch` that answers as the API would; no key, no network.

import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { expect } from "chai";
import { transform } from "esbuild";
import { compiledProject } from "../support/compiled.ts";
import { type CodeBlock, projectCodeBlocks } from "./code-blocks.ts";

const run = promisify(execFile);
const root = path.resolve(import.meta.dirname, "../..");
const blocks = projectCodeBlocks(root);

/** The folder a document's blocks run in, inside the temp project. */
const folderOf = (doc: string) => doc.replace(/\.md$/, "").replaceAll("/", "-");
/** The file a block is written to for the type check, relative to the temp project. */
const sourceOf = (block: CodeBlock) =>
  (block.mode.kind === "file" || block.mode.kind === "mocha") && block.mode.file !== undefined
    ? path.join(folderOf(block.doc), block.mode.file)
    : path.join(folderOf(block.doc), `block-${block.line}.${block.language === "ts" ? "ts" : "mjs"}`);

/**
 * Preloaded into every block's process: `fetch` to a model API's host answers as that API
 * would with a short non-streamed reply (which the adapters read as they read JSON), so
 * the README's host with `anthropicProvider()` runs without a key or the network.
 */
const fakeApis = `
const realFetch = globalThis.fetch;
globalThis.fetch = async (input, init) => {
  const url = new URL(typeof input === "string" || input instanceof URL ? input : input.url);
  const json = (body) => new Response(JSON.stringify(body), { status: 200, headers: { "content-type": "application/json" } });
  if (url.hostname === "api.anthropic.com")
    return json({ id: "msg_doc", type: "message", role: "assistant", model: "doc-test", stop_reason: "end_turn",
      content: [{ type: "text", text: "A reply from the fake Anthropic API." }], usage: { input_tokens: 1, output_tokens: 1 } });
  if (url.hostname === "api.openai.com")
    return json({ id: "chatcmpl-doc", object: "chat.completion", model: "doc-test",
      choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant", content: "A reply from the fake OpenAI API." } }],
      usage: { prompt_tokens: 1, completion_tokens: 1 } });
  return realFetch(input, init);
};
`;

interface Outcome {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

async function node(args: readonly string[], cwd: string, env: NodeJS.ProcessEnv): Promise<Outcome> {
  try {
    const { stdout, stderr } = await run(process.execPath, args, { cwd, env, timeout: 40_000 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string; message: string };
    return {
      code: typeof failed.code === "number" ? failed.code : 1,
      stdout: failed.stdout ?? "",
      stderr: failed.stderr ?? failed.message,
    };
  }
}

describe("doc tests: every ts/js block of README.md and docs/*.md runs as printed", function () {
  this.timeout(60_000);
  let project: string;
  /** tsc's errors by file of the temp project. */
  const typeErrors = new Map<string, string[]>();
  let env: NodeJS.ProcessEnv;

  before(async () => {
    project = realpathSync(mkdtempSync(path.join(os.tmpdir(), "context-host-doc-tests-")));
    // node_modules: this project's packages, and `context-host` as the compiled copy.
    const modules = path.join(project, "node_modules");
    mkdirSync(modules);
    for (const name of readdirSync(path.join(root, "node_modules"))) {
      if (name.startsWith(".")) continue;
      symlinkSync(path.join(root, "node_modules", name), path.join(modules, name));
    }
    const compiled = compiledProject().dir;
    const self = path.join(modules, "context-host");
    mkdirSync(self);
    symlinkSync(path.join(compiled, "core"), path.join(self, "core"));
    const manifest = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")) as {
      exports: Record<string, { "context-host-source"?: string }>;
    };
    const exports = Object.fromEntries(
      Object.entries(manifest.exports)
        .filter(([, target]) => target["context-host-source"] !== undefined)
        .map(([entry, target]) => [entry, (target["context-host-source"] as string).replace(/\.ts$/, ".js")]),
    );
    writeFileSync(path.join(self, "package.json"), JSON.stringify({ name: "context-host", type: "module", exports }));
    writeFileSync(path.join(project, "package.json"), JSON.stringify({ private: true, type: "module" }));
    writeFileSync(path.join(project, "fake-apis.mjs"), fakeApis);

    // Each document's working folder is a project with a `plugins/` folder, as the docs assume.
    for (const doc of new Set(blocks.map((b) => b.doc)))
      mkdirSync(path.join(project, folderOf(doc), "plugins"), { recursive: true });
    for (const block of blocks) {
      const file = path.join(project, sourceOf(block));
      mkdirSync(path.dirname(file), { recursive: true });
      writeFileSync(file, block.code);
    }
    // The type check: the project's settings, `context-host` resolving to its sources.
    writeFileSync(
      path.join(project, "tsconfig.json"),
      JSON.stringify({
        extends: path.join(root, "tsconfig.json"),
        compilerOptions: {
          noEmit: true,
          types: ["node", "mocha"],
          paths: { "context-host": [path.join(root, "core/index.ts")], "context-host/*": [path.join(root, "core/*.ts")] },
        },
        include: blocks.filter((b) => b.language === "ts" && b.mode.kind !== "same-as").map(sourceOf),
        exclude: [],
      }),
    );
    const tsc = await node(
      [path.join(root, "node_modules/typescript/bin/tsc"), "-p", ".", "--singleThreaded"],
      project,
      process.env,
    );
    for (const line of `${tsc.stdout}\n${tsc.stderr}`.split("\n")) {
      const match = /^(.+?)\(\d+,\d+\): error /.exec(line);
      if (match === null) continue;
      const file = path.resolve(project, match[1] as string);
      typeErrors.set(file, [...(typeErrors.get(file) ?? []), line]);
    }
    if (tsc.code !== 0 && typeErrors.size === 0)
      throw new Error(`tsc failed without errors in a block:\n${tsc.stdout}${tsc.stderr}`);
    const isolated = path.join(project, "config");
    mkdirSync(isolated);
    env = {
      ...process.env,
      // No user instruction file, no real key: the fake API answers (see fakeApis).
      XDG_CONFIG_HOME: isolated,
      ANTHROPIC_API_KEY: "doc-test",
      OPENAI_API_KEY: "doc-test",
      NODE_OPTIONS: `--import ${path.join(project, "fake-apis.mjs")}`,
      NO_COLOR: "1",
    };
  });
  after(() => {
    if (project !== undefined) rmSync(project, { recursive: true, force: true });
  });

  it("finds the blocks: the README's tour among them", () => {
    expect(blocks.filter((b) => b.doc === "README.md").length).to.be.at.least(3);
  });

  for (const block of blocks) {
    const what =
      block.mode.kind === "type-check"
        ? `type-checks (it cannot run here: ${block.mode.reason})`
        : block.mode.kind === "same-as"
          ? `is printed from ${block.mode.file}`
          : block.mode.kind === "file"
            ? `type-checks as ${block.mode.file}`
            : block.language === "js"
              ? "runs"
              : "type-checks and runs";
    it(`${block.doc}:${block.line} (${block.language}) ${what}`, async () => {
      if (block.mode.kind === "same-as") {
        const text = readFileSync(path.join(root, block.mode.file), "utf8");
        expect(text.includes(block.code.trim()), `${block.mode.file} does not contain the block`).to.equal(true);
        return;
      }
      const source = path.join(project, sourceOf(block));
      expect(typeErrors.get(source) ?? [], "tsc errors").to.deep.equal([]);
      if (block.mode.kind !== "program" && block.mode.kind !== "mocha") return;
      const program = block.language === "js" ? source : source.replace(/\.ts$/, ".run.mjs");
      if (block.language === "ts") {
        const { code } = await transform(block.code, { loader: "ts", format: "esm", target: "node20" });
        writeFileSync(program, code);
      }
      const cwd = path.join(project, folderOf(block.doc));
      if (block.mode.kind === "mocha") {
        const mocha = path.join(root, "node_modules/mocha/bin/mocha.js");
        const outcome = await node([mocha, "--no-config", "--timeout", "30000", "--reporter", "dot", program], cwd, env);
        expect(outcome.code, outcome.stdout + outcome.stderr).to.equal(0);
        expect(outcome.stdout).to.match(/\d+ passing/);
        return;
      }
      const outcome = await node([program], cwd, env);
      expect(outcome.stderr, "stderr").to.equal("");
      expect(outcome.code, outcome.stdout).to.equal(0);
    });
  }
});
