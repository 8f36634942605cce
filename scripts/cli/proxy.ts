// Owns `context-host proxy`: the context proxy on a port, for agents whose code the user
// does not own (Claude Code, Codex, opencode, pi): they point their API base URL at it.
// Prints the URL and how to point each agent at it, then one line per conversation
// request; stops on SIGINT or SIGTERM.

import path from "node:path";
import { parseArgs } from "node:util";
import {
  type ContextProxy,
  createContextProxy,
  formatDiagnostic,
  type ProxyBoundaryEvent,
  SettingInvalid,
} from "../../core/index.ts";
import { PostgresSessionStore } from "../../core/store.ts";
import { type Inspector, startInspector } from "./inspector/server.ts";
import { choosePlugins, noPluginsLine } from "./plugin-entries.ts";
import { proxyInspectorSource } from "./proxy-inspector.ts";
import { type CliSettings, loadSettings } from "./settings.ts";
import { pluginEntry, portValue, UsageInvalid } from "./usage.ts";

export interface ProxyArgs {
  readonly port: number;
  readonly host: string;
  readonly plugins: readonly string[];
  /** Why there are no plugins, when ./plugins does not exist and none were named (said once). */
  readonly pluginsNote?: string;
  readonly dataDir: string;
  /** A `postgres://` URL: sessions shared by every proxy that names it. */
  readonly store?: string;
  readonly upstreams: { readonly anthropic?: string; readonly openai?: string };
  readonly location: string;
  readonly settings: CliSettings;
  readonly token?: string;
  readonly inspect?: { readonly port?: number };
}

const fail = (reason: string) => new UsageInvalid({ command: "proxy", reason });

/** Parses `proxy [--port N] [--host H] [--plugins X]... [--data-dir DIR] [--store URL] [--anthropic-upstream URL] [--openai-upstream URL] [--location DIR] [--settings FILE] [--token T] [--inspect[=PORT]]`. */
export function parseProxyArgs(args: readonly string[], cwd: string, env: NodeJS.ProcessEnv = process.env): ProxyArgs {
  // `--inspect` takes its port only as `--inspect=PORT`: read it before parseArgs sees it.
  let inspect: { port?: number } | undefined;
  const rest = args.filter((arg) => {
    if (arg === "--inspect") inspect = {};
    else if (arg.startsWith("--inspect=")) inspect = { port: portValue(arg.slice("--inspect=".length), arg, "proxy") };
    else return true;
    return false;
  });
  let values: Record<string, string | string[] | undefined>;
  try {
    ({ values } = parseArgs({
      args: rest,
      strict: true,
      allowPositionals: false,
      options: {
        port: { type: "string" },
        host: { type: "string" },
        plugins: { type: "string", multiple: true },
        "data-dir": { type: "string" },
        data: { type: "string" },
        store: { type: "string" },
        "anthropic-upstream": { type: "string" },
        "openai-upstream": { type: "string" },
        location: { type: "string" },
        settings: { type: "string" },
        config: { type: "string" },
        token: { type: "string" },
      },
    }));
  } catch (error) {
    throw fail((error as Error).message.split("\n")[0] as string);
  }
  const text = (name: string) => values[name] as string | undefined;
  const store = text("store");
  if (store !== undefined && !/^postgres(?:ql)?:\/\//.test(store)) throw fail(`--store ${store}: a postgres:// URL`);
  for (const option of ["anthropic-upstream", "openai-upstream"]) {
    const value = text(option);
    if (value !== undefined && !/^https?:\/\/[^/]/.test(value)) throw fail(`--${option} ${value}: an http(s) URL`);
  }
  const settings = loadSettings(text("settings") ?? text("config"), cwd, "proxy");
  const given = (values.plugins as string[] | undefined) ?? [];
  const token = text("token") ?? env.CONTEXT_HOST_PROXY_TOKEN;
  const chosen = choosePlugins(
    given.map((entry) => pluginEntry(entry, cwd, "proxy")),
    settings.plugins,
    cwd,
  );
  const anthropic = text("anthropic-upstream");
  const openai = text("openai-upstream");
  return {
    port: portValue(text("port") ?? "4100", `--port ${text("port")}`, "proxy"),
    host: text("host") ?? "127.0.0.1",
    plugins: chosen.entries,
    ...(chosen.absentNote === undefined ? {} : { pluginsNote: chosen.absentNote }),
    dataDir: path.resolve(cwd, text("data-dir") ?? text("data") ?? ".context-host"),
    ...(store === undefined ? {} : { store }),
    upstreams: { ...(anthropic === undefined ? {} : { anthropic }), ...(openai === undefined ? {} : { openai }) },
    location: path.resolve(cwd, text("location") ?? "."),
    settings,
    ...(token === undefined || token === "" ? {} : { token }),
    ...(inspect === undefined ? {} : { inspect }),
  };
}

/** One line per conversation request: what was placed, and what the provider read from its cache. */
export function formatExchange(event: ProxyBoundaryEvent): string {
  const what =
    event.forwarded === "unchanged"
      ? `forwarded unchanged: ${event.reason ?? ""}`
      : [
          `epoch ${event.epoch?.number ?? "?"}`,
          ...(event.baseline === undefined ? [] : [`Baseline (${event.epoch?.reason ?? "initial"})`]),
          ...(event.update === undefined ? [] : ["1 update admitted"]),
          `${event.updates} in the request`,
        ].join(", ");
  const usage =
    event.usage === undefined
      ? ""
      : ` · cache read ${event.usage.cacheRead}, written ${event.usage.cacheWrite}, uncached ${event.usage.input}`;
  const status =
    (event.status === undefined ? event.outcome : `${event.status}${event.outcome === "relayed" ? "" : ` ${event.outcome}`}`) +
    (event.error === undefined ? "" : `: ${event.error}`);
  return `${event.wire} ${event.model} ${event.sessionId.split("/").at(-1) ?? ""}: ${what} · ${status}${usage}`;
}

/** Runs the proxy until SIGINT or SIGTERM (or `stop`); returns the exit code. */
export async function proxy(
  args: ProxyArgs,
  io: { readonly out: (text: string) => void; readonly err: (text: string) => void; readonly stop?: Promise<unknown> },
): Promise<number> {
  if (args.pluginsNote !== undefined) io.err(noPluginsLine(args.pluginsNote));
  const store = args.store === undefined ? undefined : await PostgresSessionStore.open({ connectionString: args.store });
  let running: ContextProxy;
  try {
    running = await createContextProxy({
      port: args.port,
      host: args.host,
      plugins: args.plugins,
      dataDir: args.dataDir,
      ...(store === undefined ? {} : { store }),
      upstreams: args.upstreams,
      location: args.location,
      ...(args.token === undefined ? {} : { token: args.token }),
      ...args.settings,
      onDiagnostic: (diagnostic) => io.err(formatDiagnostic(diagnostic)),
    });
  } catch (error) {
    await store?.close();
    if (error instanceof SettingInvalid) throw fail(error.message);
    throw error;
  }
  let inspector: Inspector | undefined;
  if (args.inspect !== undefined) {
    inspector = await startInspector({
      source: proxyInspectorSource(running),
      ...(args.inspect.port === undefined ? {} : { port: args.inspect.port }),
    });
  }
  const plugins = running.engine.plugins();
  io.out(`context-host proxy: listening on ${running.url}`);
  io.out(
    `  plugins: ${plugins.length === 0 ? "none" : plugins.map((plugin) => plugin.name).join(", ")} · sessions: ${args.store === undefined ? path.join(args.dataDir, "sessions.db") : "PostgreSQL"}`,
  );
  io.out(`  Claude Code: ANTHROPIC_BASE_URL=${running.url} claude`);
  io.out(`  Codex: base_url = "${running.url}/v1", wire_api = "responses" in ~/.codex/config.toml`);
  if (inspector !== undefined) io.out(`  inspector: ${inspector.url}`);
  const stopWatching = running.onBoundary((event) => io.out(formatExchange(event)));
  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
    void io.stop?.then(stop);
  });
  stopWatching();
  await inspector?.close().catch(() => {});
  await running.close(); // the engine closes the store it was given
  return 0;
}
