// A small demo host: composes a few Context Sources, initializes a Baseline System
// Context, changes the environment, and prints what each Safe Provider-Turn Boundary
// would admit. `npm start` runs it.

import Type from "typebox";
import * as SystemContext from "../core/system-context.ts";

const world = {
  date: "2026-12-02",
  cwd: "/work/app",
  branch: "main" as string | undefined,
  todo: ["write tests"],
  schemaVersion: 1,
};

const date = SystemContext.make({
  key: "core/date",
  schema: Type.String({ format: "date" }),
  load: () => world.date,
  baseline: (d) => `Today's date is ${d}.`,
  update: (_previous, d) => `The date is now ${d}.`,
});

const directory = SystemContext.make({
  key: "core/environment",
  schema: Type.Object({ cwd: Type.String() }),
  load: () => ({ cwd: world.cwd }),
  baseline: (e) => `Working directory: ${e.cwd}`,
  update: (_previous, e) => `The working directory is now ${e.cwd}.`,
});

const branch = SystemContext.make({
  key: "git/branch",
  schema: Type.String(),
  load: () => world.branch ?? SystemContext.absent,
  baseline: (b) => `Git branch: ${b}`,
  update: (_previous, b) => `The git branch is now ${b}.`,
  removed: (b) => `The project is no longer on git branch ${b}; it is not a git repository any more.`,
});

const todo = () =>
  world.schemaVersion === 1
    ? SystemContext.make({
        key: "notes/todo",
        schema: Type.Array(Type.String()),
        load: () => world.todo,
        baseline: (items) => `Open tasks:\n${items.map((t) => `- ${t}`).join("\n")}`,
        update: (_previous, items) => `Open tasks are now:\n${items.map((t) => `- ${t}`).join("\n")}`,
      })
    : SystemContext.make({
        key: "notes/todo",
        schema: Type.Object({ items: Type.Array(Type.String()) }),
        load: () => ({ items: world.todo }),
        baseline: (v) => `Open tasks (${v.items.length}):\n${v.items.map((t) => `- ${t}`).join("\n")}`,
        update: (_previous, v) => `Open tasks are now:\n${v.items.map((t) => `- ${t}`).join("\n")}`,
      });

const compose = () => SystemContext.combine([date, directory, branch, todo()]);

function show(title: string, body: string) {
  console.log(`\n=== ${title} ===\n${body}`);
}

let generation = await SystemContext.initialize(compose());
show("Baseline System Context", generation.baseline);
let snapshot = generation.snapshot;

async function boundary(what: string) {
  const result = await SystemContext.reconcile(compose(), snapshot);
  switch (result.kind) {
    case "unchanged":
      show(`${what} → unchanged`, "(nothing admitted; the next request extends the previous one byte for byte)");
      return;
    case "updated":
      show(`${what} → Mid-Conversation System Message`, result.text);
      snapshot = result.snapshot;
      return;
    case "replaced":
      show(`${what} → replacement Baseline (new Context Epoch)`, result.generation.baseline);
      generation = result.generation;
      snapshot = generation.snapshot;
      return;
    case "replacement-blocked":
      show(`${what} → replacement blocked`, result.keys.join(", "));
      return;
  }
}

await boundary("Nothing changed");
world.date = "2026-12-03";
world.todo = ["write tests", "ship the demo"];
await boundary("Date and tasks changed");
world.branch = undefined;
await boundary("Left the git repository");
world.schemaVersion = 2;
world.todo = ["ship the demo"];
await boundary("The tasks source changed its schema incompatibly");
console.log(`\nFinal Context Snapshot:\n${JSON.stringify(snapshot, null, 2)}`);
