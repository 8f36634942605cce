// Owns `context-host dev`: a terminal session over the user's plugins. At each Safe
// Provider-Turn Boundary it prints, set apart from the conversation, the Baseline when
// a Context Epoch starts and each admitted Mid-Conversation System Message, then the
// reply; plugin reloads and each new diagnostic appear as they happen. Everything it
// learns goes into the dev model (`model.ts`), which the browser inspector reads.

import path from "node:path";
import readline from "node:readline";
import {
  anthropicProvider,
  createHost,
  type Diagnostic,
  escapeControl,
  formatDiagnostic,
  formatOrigin,
  type Host,
  type McpServerInfo,
  openAICompatibleProvider,
  type PluginInfo,
  type Provider,
  type ProviderRequest,
  readToolDefinition,
  scriptedProvider,
} from "../../../core/index.ts";
import { openAIModels } from "../../../core/providers.ts";
import type { StoredMessage } from "../../../core/store.ts";
import { type Inspector, startInspector } from "../inspector/server.ts";
import { messageOf } from "../message.ts";
import { type MessageView, messageView } from "../session-view.ts";
import { type DevArgs, type DevProviderName, devProviders, isDevProvider } from "./args.ts";
import { devInspectorSource } from "./inspector-source.ts";
import { DevModelStore } from "./model.ts";
import { Screen, safeLines, wantsColor } from "./screen.ts";

/** Exit code after Ctrl-C (128 + SIGINT). */
export const interruptedExitCode = 130;

/** The host system prompt of dev sessions. */
const systemPrompt = "You are a coding agent working in the user's project.";

export interface DevIo {
  readonly cwd: string;
  readonly input: NodeJS.ReadableStream & { isTTY?: boolean };
  readonly output: NodeJS.WritableStream & { isTTY?: boolean };
  readonly err: (text: string) => void;
  readonly env: NodeJS.ProcessEnv;
}

/** Starts the browser inspector over the dev model (`--inspect[=PORT]`). */
function startDevInspector(options: { model: DevModelStore; host: Host; port?: number }): Promise<Inspector> {
  return startInspector({
    source: devInspectorSource(options.model, () => options.host.mcpServers()),
    ...(options.port === undefined ? {} : { port: options.port }),
  });
}

function providersFor(args: DevArgs): Record<DevProviderName, Provider> {
  const tools = [readToolDefinition];
  const baseURL = (name: DevProviderName) => (args.provider === name ? args.baseUrl : undefined);
  return {
    scripted: scriptedProvider(),
    anthropic: anthropicProvider({
      tools,
      ...(baseURL("anthropic") === undefined ? {} : { baseURL: baseURL("anthropic") as string }),
    }),
    openai: openAICompatibleProvider({ baseURL: baseURL("openai") ?? "https://api.openai.com/v1", models: openAIModels, tools }),
  };
}

function bannerOf(args: DevArgs, env: NodeJS.ProcessEnv): string {
  if (args.provider === "scripted") {
    return "provider: scripted — it echoes your prompt (no model, no key); try --provider anthropic --model M";
  }
  const keyEnv = args.provider === "anthropic" ? "ANTHROPIC_API_KEY" : "OPENAI_API_KEY";
  const key = env[keyEnv] === undefined || env[keyEnv] === "" ? `${keyEnv} is not set` : `key from ${keyEnv}`;
  return `provider: ${args.provider}, model ${args.model}${args.baseUrl === undefined ? "" : ` at ${args.baseUrl}`} (${key})`;
}

/** The `/mcp` listing: each server and its state, then each resource's key, URI, state and reads. */
export function mcpLines(servers: readonly McpServerInfo[]): string[] {
  const lines: string[] = [];
  for (const server of servers) {
    const subscribe = server.canSubscribe ? "subscriptions" : "no subscriptions";
    lines.push(`  ${server.name} (${server.transport}, ${server.state}, ${subscribe})`);
    if (server.instructionsKey !== undefined) lines.push(`    ${server.instructionsKey}`);
    for (const r of server.resources) {
      const read = r.readMs === undefined ? "" : `, last read ${r.readMs.toFixed(1)} ms`;
      lines.push(`    ${r.key}  ${r.uri}  ${r.state}${r.isSubscribed ? ", subscribed" : ""}, ${r.reads} reads${read}`);
    }
  }
  return lines.map((line) => safeLines(line).join(" "));
}

const help = [
  "/context        the Baseline, the snapshot, what the next boundary would admit (nothing is admitted), sources with no value and why",
  "/plugins        the active plugins, their generations, last reload and where each came from",
  "/problems       the problems that still hold",
  "/mcp            the MCP servers, their state and their resources' sources",
  "/compact        summarise the conversation; the next prompt starts a new Context Epoch",
  "/model P M      switch provider and model (P: scripted, anthropic, openai); a new epoch",
  "/cd DIR         move the session to DIR; a new epoch there",
  "/help           this list",
  "/quit           leave (Ctrl-C leaves with exit code 130)",
  "anything else   a prompt: one Safe Provider-Turn Boundary and the model's reply",
];

/** Runs the dev session until `/quit`, the end of input (0) or Ctrl-C (130). */
export async function dev(args: DevArgs, io: DevIo): Promise<number> {
  const isTTY = io.input.isTTY === true && io.output.isTTY === true;
  const screen = new Screen({
    write: (text) => io.output.write(text),
    isTTY,
    color: wantsColor(io.output.isTTY === true, io.env),
  });
  const model = new DevModelStore();
  // A path inside the working folder relative to it, else absolute.
  const shown = (file: string) => {
    const relative = path.relative(io.cwd, file);
    return escapeControl(relative === "" || relative.startsWith("..") ? file : relative);
  };
  // A `plugins` entry: a path, or a package name as given.
  const shownEntry = (entry: string) => (path.isAbsolute(entry) ? shown(entry) : escapeControl(entry));
  // Where a plugin came from: its file in a folder, or its package and version, then its file.
  const shownOrigin = (plugin: PluginInfo) =>
    plugin.origin.kind === "package"
      ? `${escapeControl(formatOrigin(plugin.origin, io.cwd))} (${shown(plugin.file)})`
      : shown(plugin.file);

  const host = await createHost({
    dataDir: args.dataDir,
    providers: providersFor(args),
    systemPrompt,
    ...args.settings,
    plugins: args.plugins,
    projectRoot: io.cwd,
    // Printed below, in the session's own lines.
    onDiagnostic: false,
    logger: {
      info: () => {},
      warn: (message) => screen.line("note", `  [warn] ${safeLines(message).join(" ")}`),
      error: (message) => screen.line("problem", `  [error] ${safeLines(message).join(" ")}`),
    },
  });
  let inspector: Inspector | undefined;
  let unsubscribe = () => {};
  let exitCode: number | undefined;
  /** Cancels the provider call of the turn running now, if any. */
  let inFlight: AbortController | undefined;
  try {
    for (const plugin of host.plugins()) model.recordPlugin("activated", plugin);
    model.syncProblems(host.currentDiagnostics());
    const printDiagnostic = (text: string) => screen.lines(text.split("\n").map((line) => screen.paint("problem", `  ${line}`)));
    unsubscribe = host.onPluginEvent((event) => {
      if (event.kind === "diagnostic") {
        model.recordProblem(event.diagnostic, host.currentDiagnostics());
        printDiagnostic(formatDiagnostic(event.diagnostic, io.cwd));
        return;
      }
      model.syncProblems(host.currentDiagnostics());
      if (event.kind === "activated") {
        const info = host.plugins().find((p) => p.file === event.file && p.generation === event.generation);
        const loadMs = info?.loadMs;
        if (info !== undefined) model.recordPlugin("activated", info);
        screen.line(
          "reload",
          `  ${event.plugin} generation ${event.generation} active${loadMs === undefined ? "" : ` in ${loadMs} ms`}`,
        );
      } else if (event.kind === "restored") {
        screen.line(
          "reload",
          `  ${event.plugin} back to generation ${event.generation} (the failed save's problems are cleared)`,
        );
      } else {
        model.recordPlugin("removed", { name: event.plugin, file: event.file });
        screen.line("reload", `  ${event.plugin} removed (${shown(event.file)})`);
      }
    });

    let location = io.cwd;
    let current = { provider: args.provider as string, model: args.model };
    const id = await host.createSession({ location, ...current });
    model.putSession({ id, location, ...current });
    if (args.inspect !== undefined) {
      inspector = await startDevInspector({
        model,
        host,
        ...(args.inspect?.port === undefined ? {} : { port: args.inspect.port }),
      });
    }

    const plugins = host.plugins();
    screen.lines([
      `context-host dev — session ${id}`,
      screen.paint("note", bannerOf(args, io.env)),
      screen.paint(
        "note",
        `plugins: ${plugins.map((p) => `${p.name} (${p.keys.join(", ")})`).join("; ") || "none"}${pluginsFrom(args, shownEntry)}`,
      ),
      ...(inspector === undefined ? [] : [screen.paint("note", `inspector: ${inspector.url}`)]),
    ]);
    for (const diagnostic of host.currentDiagnostics()) printDiagnostic(formatDiagnostic(diagnostic, io.cwd));
    screen.line("note", "Type a prompt, or /help for the commands.");

    let seenSeq = 0;
    const newMessages = async (): Promise<StoredMessage[]> => {
      const all = await host.messages(id);
      const fresh = all.filter((m) => m.seq > seenSeq);
      seenSeq = all.at(-1)?.seq ?? seenSeq;
      return fresh;
    };
    /** Prints messages (the views the model keeps); the text of an assistant message whose reply was streamed is already on screen. */
    const printMessages = (messages: readonly MessageView[], streamedSeq?: number) => {
      for (const message of messages) {
        if (message.isSystemUpdate) screen.section("update", "Mid-Conversation System Message", message.text);
        else if (message.role === "summary") screen.section("summary", "Compaction summary", message.text);
        else if (message.role === "assistant") {
          if (message.seq !== streamedSeq)
            screen.lines(safeLines(message.text).map((line, i) => `${i === 0 ? "assistant: " : "           "}${line}`));
          for (const name of message.toolNames ?? []) screen.line("note", `  (tool call ${safeLines(name).join(" ")})`);
        } else if (message.role === "tool")
          screen.line(
            "note",
            `  (tool ${safeLines(message.toolNames?.[0] ?? "?").join(" ")}: ${message.text.length} characters)`,
          );
      }
    };

    /** The boundary just admitted, before the provider is called: a new Baseline, the Mid-Conversation System Message. */
    async function showBoundary(request: ProviderRequest): Promise<void> {
      const epoch = await host.epoch(id);
      const appended = await newMessages();
      if (epoch === undefined) {
        printMessages(appended.map(messageView));
        return;
      }
      const { epochStarted, admitted } = model.recordBoundary(id, { request, epoch, admitted: appended });
      if (epochStarted !== undefined) {
        screen.section(
          "baseline",
          `Baseline System Context · epoch ${epochStarted.number} (${epochStarted.reason})`,
          epoch.baseline,
        );
      }
      printMessages(admitted);
    }

    /** Writes the reply as it streams (decision 123); a retried call's reply starts again on a new line. */
    let streamedAttempt: number | undefined;
    const showText = (piece: string, attempt: number) => {
      if (streamedAttempt !== undefined && streamedAttempt !== attempt)
        screen.line("note", "  (the call was retried: its reply again, from the start)");
      if (streamedAttempt !== attempt) screen.partial("assistant: ");
      streamedAttempt = attempt;
      screen.partial(safeLines(piece).join("\n           "));
    };

    async function turn(text: string): Promise<void> {
      await host.prompt(id, text);
      for (;;) {
        streamedAttempt = undefined;
        inFlight = new AbortController();
        let result: Awaited<ReturnType<Host["step"]>>;
        try {
          result = await host.step(id, { onRequest: showBoundary, onText: showText, signal: inFlight.signal });
        } finally {
          inFlight = undefined;
          screen.endLine();
        }
        if (result.kind === "idle") return;
        if (result.kind === "blocked") {
          screen.line("problem", `  blocked: unavailable core sources ${result.keys.join(", ")}`);
          return;
        }
        if (result.kind === "in-flight") {
          screen.line("note", "  another process is calling the provider for this session; try again shortly");
          return;
        }
        const replied = model.appendMessages(id, await newMessages());
        const reply = replied.find((m) => m.role === "assistant");
        printMessages(replied, streamedAttempt === undefined ? undefined : reply?.seq);
        if ((result.reply.toolCalls ?? []).length === 0) return;
      }
    }

    async function showContext(): Promise<void> {
      const epoch = await host.epoch(id);
      if (epoch === undefined) screen.line("note", "  no Context Epoch yet: the first prompt renders the Baseline");
      else {
        screen.section("baseline", `Baseline System Context · epoch ${epoch.number} (${epoch.reason})`, epoch.baseline);
        const rows = Object.entries(epoch.snapshot).map(([key, entry]) => `${key} = ${JSON.stringify(entry.value)}`);
        screen.section("note", "Context Snapshot", rows.length === 0 ? "(empty)" : rows.join("\n"));
      }
      const next = await host.preview(id);
      if (next.kind === "update") screen.section("update", "Would be admitted at the next boundary (not admitted)", next.text);
      else if (next.kind === "new-epoch") {
        screen.section("baseline", `The next boundary starts a new epoch (${next.reason}) with this Baseline`, next.baseline);
      } else if (next.kind === "blocked") screen.line("problem", `  the next boundary is blocked: ${next.keys.join(", ")}`);
      else screen.line("note", "  nothing new would be admitted at the next boundary");
      const withValue = new Set(Object.keys(next.kind === "blocked" ? (epoch?.snapshot ?? {}) : next.snapshot));
      const missing = withoutValue(host.plugins(), host.currentDiagnostics(), withValue);
      if (missing.length > 0) screen.section("note", "Sources with no value (left out of the context)", missing.join("\n"));
    }

    async function command(line: string): Promise<boolean> {
      const text = line.trim();
      if (text === "") return true;
      if (!text.startsWith("/")) {
        await turn(line);
        return true;
      }
      const [name, ...rest] = text.split(/\s+/);
      switch (name) {
        case "/quit":
        case "/exit":
          return false;
        case "/help":
          screen.lines(help.map((l) => `  ${l}`));
          return true;
        case "/context":
          await showContext();
          return true;
        case "/plugins": {
          const active = host.plugins();
          if (active.length === 0) screen.line("note", "  no plugins are active");
          for (const p of active) {
            screen.line(
              "note",
              `  ${p.name} generation ${p.generation} (loaded in ${p.loadMs} ms): ${p.keys.join(", ")} — ${shownOrigin(p)}`,
            );
          }
          return true;
        }
        case "/mcp": {
          const servers = host.mcpServers();
          if (servers.length === 0) screen.line("note", "  no MCP servers (mcpServers in the settings file)");
          for (const line of mcpLines(servers)) screen.line("note", line);
          return true;
        }
        case "/problems": {
          const problems = host.currentDiagnostics();
          if (problems.length === 0) screen.line("note", "  no current problems");
          for (const d of problems) printDiagnostic(formatDiagnostic(d, io.cwd));
          return true;
        }
        case "/compact":
          await host.compact(id);
          {
            printMessages(model.appendMessages(id, await newMessages()));
          }
          screen.line("note", "  compacted: the next prompt starts a new Context Epoch");
          return true;
        case "/model": {
          const [provider, modelName] = rest;
          if (provider === undefined || modelName === undefined || rest.length > 2 || !isDevProvider(provider)) {
            screen.line("problem", `  usage: /model P M, with P one of ${devProviders.join(", ")}`);
            return true;
          }
          await host.switchModel(id, { provider, model: modelName });
          current = { provider, model: modelName };
          model.putSession({ id, location, ...current });
          screen.line("note", `  now ${provider} ${modelName}: the next prompt starts a new Context Epoch`);
          return true;
        }
        case "/cd": {
          const target = path.resolve(location, rest.join(" ") || io.cwd);
          await host.move(id, target);
          location = target;
          model.putSession({ id, location, ...current });
          screen.line("note", `  moved to ${safeLines(target).join(" ")}: the next prompt starts a new Context Epoch there`);
          return true;
        }
        default:
          screen.line("problem", `  unknown command ${safeLines(name ?? "").join(" ")}; /help lists them`);
          return true;
      }
    }

    exitCode = await repl(io, screen, async (line) => {
      try {
        return await command(line);
      } catch (error) {
        // A failed turn or command is reported and the session goes on.
        screen.line("problem", `  ${(error as Error).name ?? "Error"}: ${safeLines(messageOf(error)).join(" ")}`);
        return true;
      }
    });
    return exitCode;
  } finally {
    // Closing unloads the plugins: that is no news to print.
    unsubscribe();
    await inspector?.close().catch(() => {});
    // After Ctrl-C a turn may still be running (a provider call streaming): cancel its call
    // (nothing of that reply is stored; the prompt stays admitted) and do not wait long.
    if (exitCode === interruptedExitCode) inFlight?.abort();
    const closing = host.close();
    if (exitCode === interruptedExitCode) {
      await Promise.race([closing.catch(() => {}), new Promise((resolve) => setTimeout(resolve, 2000).unref())]);
    } else await closing;
  }
}

/** Reads lines one at a time until `/quit` (0), the end of input (0) or Ctrl-C (130). */
function repl(io: DevIo, screen: Screen, handle: (line: string) => Promise<boolean>): Promise<number> {
  const lines = readline.createInterface({
    input: io.input,
    output: io.output,
    terminal: screen.isTTY,
    prompt: screen.isTTY ? "you> " : "",
  });
  screen.attach(lines);
  return new Promise<number>((resolve) => {
    let queue = Promise.resolve(true);
    let code: number | undefined;
    const finish = (exitCode: number) => {
      if (code !== undefined) return;
      code = exitCode;
      process.off("SIGINT", onSignal);
      lines.close();
      resolve(exitCode);
    };
    const onSignal = () => {
      if (screen.isTTY) io.output.write("^C\n");
      finish(interruptedExitCode);
    };
    lines.on("SIGINT", onSignal);
    process.on("SIGINT", onSignal);
    lines.on("line", (line) => {
      screen.promptAnswered();
      queue = queue.then(async (goOn) => {
        if (!goOn || code !== undefined) return false;
        const next = await handle(line);
        if (!next) finish(0);
        else if (code === undefined) screen.showPrompt();
        return next;
      });
    });
    lines.on("close", () => void queue.then(() => finish(0)));
    screen.showPrompt();
  });
}

/**
 * The plugin sources and plugins that give the model nothing now, and why: a fault the
 * diagnostics name (the loader threw, a value its schema rejects, a plugin that did not
 * load), else what the loader last returned, `absent` (nothing to tell) or `unavailable`
 * (cannot tell now: an admitted value stays what the model was told).
 */
export function withoutValue(
  plugins: readonly PluginInfo[],
  problems: readonly Diagnostic[],
  withValue: ReadonlySet<string>,
): string[] {
  const lines: string[] = [];
  const active = new Set(plugins.map((p) => p.name));
  for (const plugin of plugins) {
    for (const key of plugin.keys) {
      if (withValue.has(key)) continue;
      const fault = problems.find((d) => d.plugin === plugin.name && d.key === key);
      const observed = plugin.observed[key];
      lines.push(
        fault !== undefined
          ? `${key}: failed (${fault.phase}): ${safeLines(fault.message).join(" ")} — /problems shows where`
          : observed === "absent"
            ? `${key}: absent: its loader observed nothing to tell`
            : observed === "unavailable"
              ? `${key}: unavailable: its loader cannot tell right now (it is left out until it loads)`
              : `${key}: not observed yet`,
      );
    }
  }
  const unloaded = new Set<string>();
  for (const problem of problems) {
    if (problem.origin !== "plugin" || active.has(problem.plugin) || unloaded.has(problem.plugin)) continue;
    unloaded.add(problem.plugin);
    lines.push(
      `${problem.plugin} (plugin): did not load (${problem.phase}): ${safeLines(problem.message).join(" ")} — /problems shows where`,
    );
  }
  return lines;
}

/** Where the banner's plugins came from: the entries, or why there are none (an absent ./plugins); nothing for an empty list the user chose. */
function pluginsFrom(args: DevArgs, shownEntry: (entry: string) => string): string {
  if (args.plugins.length > 0) return ` — from ${args.plugins.map(shownEntry).join(", ")}`;
  return args.pluginsNote === undefined ? "" : ` — ${args.pluginsNote}`;
}
