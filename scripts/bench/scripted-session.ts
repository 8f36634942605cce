// The scripted session of the cache-prefix benches (issue 4's, reused by issue 6's wire
// bench): `steps` boundaries through `createHost` (real SQLite file in a temp folder,
// scripted provider) while six core Context Sources change every few steps (seeded):
// the environment, git status, open files, a todo list, the date, and rarely the project
// instructions. User prompts and replies vary in length; some replies call the
// `read_file` tool (its result is the next boundary's input). All in one Context Epoch,
// unless `compactAt` compacts the session before that step (a second epoch).
//
// Everything random comes from one generator seeded with `seed`, drawn in a fixed order,
// so equal options give byte-identical requests on every run.

import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import Type from "typebox";
import { createHost, type ProviderReply, type ProviderRequest, readToolDefinition, scriptedProvider } from "../../core/index.ts";
import type { ToolDefinition } from "../../core/providers/index.ts";
import type { CoreSource } from "../../core/sources/core-source.ts";
import * as SystemContext from "../../core/system-context.ts";
import { seededRandom } from "./measure.ts";

/** Options of `runScriptedSession`. */
export interface ScriptedSessionOptions {
  /** Provider-turn boundaries (one request each); at least 4. */
  readonly steps: number;
  /** Seed of the source value timeline and the conversation. */
  readonly seed: number;
  /** Compact the session right before this step (starting a new Context Epoch); none when absent or negative. */
  readonly compactAt?: number;
  /** Where the temp data folder goes; the OS's temp folder when absent or empty. */
  readonly tmpDir?: string;
}

/** One boundary of the session: the request the host sent and what a naive host would have rendered then. */
export interface ScriptedTurn {
  /** The Context Epoch of the request: 0, then +1 at each compaction. */
  readonly epoch: number;
  /** The ProviderRequest exactly as the host sent it (provider `scripted`, model `bench`). */
  readonly request: ProviderRequest;
  /**
   * The Baseline a naive host would render at this boundary from the values current now
   * (`SystemContext.initialize` of the same sources at the same moment).
   */
  readonly currentBaseline: string;
}

/** The recorded session. */
export interface ScriptedSession {
  /** The host system prompt (first part of every request's `system`). */
  readonly systemPrompt: string;
  /** Declarations of the tools the host offers the model: the built-in `read` and the session's `read_file`. */
  readonly tools: readonly ToolDefinition[];
  /** One per step, in order. */
  readonly turns: readonly ScriptedTurn[];
}

const readFileDefinition: ToolDefinition = {
  name: "read_file",
  description: "Read a file of the project.",
  inputSchema: Type.Object({ path: Type.String() }) as unknown as ToolDefinition["inputSchema"],
};

/**
 * Runs the scripted session and returns its requests. The temp data folder is removed
 * before this resolves or rejects (and on SIGTERM meanwhile).
 */
export async function runScriptedSession(options: ScriptedSessionOptions): Promise<ScriptedSession> {
  const { steps, seed } = options;
  if (steps < 4) throw new RangeError("steps must be at least 4");
  const compactAt = options.compactAt ?? -1;

  const rng = seededRandom(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(rng() * items.length)] as T;
  const words = "the of a to in file test build fix type error module session context source update cache plugin".split(" ");
  const sentence = (min: number, max: number) =>
    Array.from({ length: min + Math.floor(rng() * (max - min)) }, () => pick(words)).join(" ");

  // --- The environment the sources observe, changed between steps -------------------------

  const files = Array.from({ length: 40 }, (_, i) => `src/${pick(["core", "lib", "app"])}/${pick(words)}-${i}.ts`);
  const env = {
    date: 1,
    branch: "main",
    modified: [] as string[],
    open: [files[0] as string],
    todo: ["read the issue", "write the failing test"],
    instructions: `# AGENTS.md\n\n${Array.from({ length: 40 }, () => `- ${sentence(6, 14)}.`).join("\n")}`,
  };

  function change(step: number): void {
    if (step % 25 === 24) env.date += 1;
    if (rng() < 0.25) env.modified = [...new Set([...env.modified, pick(files)])].slice(-8);
    if (rng() < 0.05) env.branch = `feature/${pick(words)}-${step}`;
    if (rng() < 0.15) env.open = [...new Set([...env.open, pick(files)])].slice(-5);
    if (rng() < 0.1) env.todo = rng() < 0.5 ? env.todo.slice(1) : [...env.todo, sentence(3, 7)].slice(-6);
    if (rng() < 0.01) env.instructions += `\n- ${sentence(6, 14)}.`;
  }

  const Strings = Type.Array(Type.String());
  const sources = [
    SystemContext.make({
      key: "core/environment",
      schema: Type.Object({ cwd: Type.String(), platform: Type.String() }),
      load: () => ({ cwd: "/work/app", platform: "linux" }),
      baseline: (v) => `<env>\nWorking directory: ${v.cwd}\nPlatform: ${v.platform}\n</env>`,
      update: (_p, v) => `The working directory is now ${v.cwd} on ${v.platform}.`,
    }),
    SystemContext.make({
      key: "core/instructions",
      schema: Type.String(),
      load: () => env.instructions,
      baseline: (v) => `Instructions from AGENTS.md:\n${v}`,
      update: (_p, v) => `AGENTS.md changed; its complete current contents:\n${v}`,
      removed: () => "AGENTS.md no longer applies.",
    }),
    SystemContext.make({
      key: "core/date",
      schema: Type.Integer(),
      load: () => env.date,
      baseline: (v) => `Today's date: 2026-03-${String(v).padStart(2, "0")}`,
      update: (_p, v) => `The date is now 2026-03-${String(v).padStart(2, "0")}.`,
    }),
    SystemContext.make({
      key: "core/git",
      schema: Type.Object({ branch: Type.String(), modified: Strings }),
      load: () => ({ branch: env.branch, modified: env.modified }),
      baseline: (v) => `Git branch: ${v.branch}\nModified files: ${v.modified.join(", ") || "none"}`,
      update: (_p, v) => `Git status now: branch ${v.branch}; modified: ${v.modified.join(", ") || "none"}.`,
    }),
    SystemContext.make({
      key: "core/open-files",
      schema: Strings,
      load: () => env.open,
      baseline: (v) => `Open in the editor: ${v.join(", ")}`,
      update: (_p, v) => `Now open in the editor: ${v.join(", ")}.`,
    }),
    SystemContext.make({
      key: "core/todo",
      schema: Strings,
      load: () => env.todo,
      baseline: (v) => `Todo:\n${v.map((item) => `- [ ] ${item}`).join("\n")}`,
      update: (_p, v) => `The todo list is now:\n${v.map((item) => `- [ ] ${item}`).join("\n")}`,
    }),
  ];
  const core: CoreSource[] = sources.map((context, i) => ({ key: `core/source${i}`, load: () => context }));
  const composed = SystemContext.combine(sources);

  const systemPrompt = `You are a careful coding agent working in the user's repository.\n${Array.from(
    { length: 12 },
    () => `${sentence(10, 20)}.`,
  ).join("\n")}`;

  // --- The session --------------------------------------------------------------------------

  let calls = 0;
  const reply = (request: ProviderRequest): ProviderReply => {
    const text = sentence(20, 160);
    if (request.messages.at(-1)?.role !== "tool" && rng() < 0.2) {
      calls += 1;
      return { text, toolCalls: [{ id: `call-${calls}`, name: readFileDefinition.name, input: { path: pick(files) } }] };
    }
    return { text };
  };
  const provider = scriptedProvider(Array.from({ length: steps * 2 + 10 }, () => reply));

  const dataDir = mkdtempSync(path.join(options.tmpDir || os.tmpdir(), "context-host-bench-scripted-session-"));
  const cleanUp = () => rmSync(dataDir, { recursive: true, force: true });
  const onTerminate = () => {
    cleanUp();
    process.exit(143);
  };
  process.once("SIGTERM", onTerminate);

  const turns: ScriptedTurn[] = [];
  try {
    const host = await createHost({
      dataDir,
      providers: { scripted: provider },
      systemPrompt,
      core,
      builtins: false,
      plugins: [],
      watch: false,
      tools: { [readFileDefinition.name]: (input) => `contents of ${(input as { path: string }).path}:\n${sentence(30, 120)}` },
    });
    try {
      const id = await host.createSession({ location: dataDir, provider: "scripted", model: "bench" });
      let epoch = 0;
      let toolTurn = false;
      for (let step = 0; step < steps; step++) {
        if (step === compactAt) {
          await host.compact(id);
          epoch += 1;
        }
        if (step > 0) change(step);
        if (!toolTurn) await host.prompt(id, sentence(8, 60));
        // The naive host renders everything from the values current at this boundary.
        const currentBaseline = (await SystemContext.initialize(composed)).baseline;
        const result = await host.step(id);
        if (result.kind !== "replied") throw new Error(`step ${step}: expected a reply, got ${result.kind}`);
        toolTurn = (result.reply.toolCalls ?? []).length > 0;
        turns.push({ epoch, request: result.request, currentBaseline });
      }
    } finally {
      await host.close();
    }
  } finally {
    process.off("SIGTERM", onTerminate);
    cleanUp();
  }
  return { systemPrompt, tools: [readToolDefinition, readFileDefinition], turns };
}
