// The development host (`npm start`): a session with the built-in sources and the
// plugins of ./plugins, hot-reloading while it runs. Type a prompt to run one Safe
// Provider-Turn Boundary; edit a plugin in another window and watch the next prompt
// carry its change. Plugin changes never wake the session: they wait for your prompt.
//
// Commands: :plugins, :diagnostics, :compact, :move DIR, :quit. With stdin not a
// terminal, each line is a prompt and the host exits at the end of input.

import path from "node:path";
import readline from "node:readline";
import { createHost, formatDiagnostic, scriptedProvider } from "../core/index.ts";

const cwd = process.cwd();
const host = await createHost({
  dataDir: path.join(cwd, ".context-host"),
  providers: { scripted: scriptedProvider() },
  systemPrompt: "You are a coding agent.",
  plugins: [path.join(cwd, "plugins")],
  builtins: true,
  logger: { info: () => {}, warn: (m) => console.log(`  [warn] ${m}`), error: (m) => console.log(`  [error] ${m}`) },
});
host.onPluginEvent((event) => {
  if (event.kind === "activated") console.log(`  [plugins] ${event.plugin} generation ${event.generation} active`);
  if (event.kind === "removed") console.log(`  [plugins] ${event.plugin} removed`);
  if (event.kind === "diagnostic") console.log(`  [plugins] ${formatDiagnostic(event.diagnostic, cwd)}`);
});

const id = await host.createSession({ location: cwd, provider: "scripted", model: "scripted-1" });
console.log(`context-host dev host — session ${id}`);
console.log(
  `plugins: ${
    host
      .plugins()
      .map((p) => `${p.name} (${p.keys.join(", ")})`)
      .join("; ") || "none"
  }`,
);
for (const d of host.diagnostics) console.log(`  ${formatDiagnostic(d, cwd)}`);
console.log("Type a prompt (or :plugins, :diagnostics, :compact, :move DIR, :quit).\n");

let shown = 0;
async function turn(text: string) {
  await host.prompt(id, text);
  for (;;) {
    const result = await host.step(id);
    if (result.kind === "idle") return;
    if (result.kind === "blocked") {
      console.log(`  blocked: unavailable core sources ${result.keys.join(", ")}`);
      return;
    }
    if (result.kind === "in-flight") {
      console.log("  another process is calling the provider for this session");
      return;
    }
    const { request, reply } = result;
    if (shown === 0 || request.messages.length < shown) {
      console.log(`── Baseline System Context ──\n${request.system.at(-1)}\n─────────────────────────────`);
      shown = 0;
    }
    for (const message of request.messages.slice(shown)) {
      if (message.role === "system-update") console.log(`── Mid-Conversation System Message ──\n${message.text}\n──`);
      if (message.role === "summary") console.log(`── compaction summary ──\n${message.text}\n──`);
    }
    console.log(`assistant: ${reply.text}`);
    shown = request.messages.length + 1;
    if ((reply.toolCalls ?? []).length === 0) return;
  }
}

async function command(line: string): Promise<boolean> {
  const [name, ...rest] = line.trim().split(/\s+/);
  switch (name) {
    case ":quit":
      return false;
    case ":plugins":
      for (const p of host.plugins()) console.log(`  ${p.name} generation ${p.generation}: ${p.keys.join(", ")} (${p.file})`);
      return true;
    case ":diagnostics":
      for (const d of host.diagnostics) console.log(`  ${formatDiagnostic(d, cwd)}`);
      return true;
    case ":compact":
      await host.compact(id);
      console.log("  compacted: the next prompt starts a new Context Epoch");
      return true;
    case ":move":
      await host.move(id, path.resolve(cwd, rest.join(" ") || "."));
      console.log("  moved: the next prompt starts a new Context Epoch there");
      return true;
    default:
      if (line.trim() !== "") await turn(line);
      return true;
  }
}

const lines = readline.createInterface({ input: process.stdin, terminal: process.stdin.isTTY === true });
if (process.stdin.isTTY) lines.setPrompt("> ");
lines.prompt?.();
try {
  for await (const line of lines) {
    if (!(await command(line))) break;
    lines.prompt?.();
  }
} finally {
  lines.close();
  await host.close();
}
