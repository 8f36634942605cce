// Owns `context-host proxy`: the context proxy on a port, for agents whose code the user
// does not own (Claude Code, Codex, opencode, pi): they point their API base URL at it.
// Prints the URL and how to point each agent at it, then one line per conversation
// request; stops on SIGINT or SIGTERM.

import path from "node:path";
import {
  type ContextProxy,
  createContextProxy,
  formatDiagnostic,
  type ProxyBoundaryEvent,
  SettingInvalid,
} from "../../core/index.ts";
import { PostgresSessionStore } from "../../core/store.ts";
import { httpUrl, invalidValue, keepText, parseCommandLine, type ReadContext, valueOption } from "./arguments.ts";
import { type Inspector, startInspector } from "./inspector/server.ts";
import { choosePlugins, noPluginsLine } from "./plugin-entries.ts";
import { proxyInspectorSource } from "./proxy-inspector.ts";
import { type CliSettings, loadSettings } from "./settings.ts";
import { UsageInvalid } from "./usage.ts";

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

/** The port the proxy listens on when `--port` is not given. */
const defaultPort = 4100;

/** A `--store` value: a PostgreSQL connection URL. */
function postgresUrl(text: string, at: ReadContext): string {
  if (!/^postgres(?:ql)?:\/\//.test(text)) throw invalidValue(text, at, "a postgres:// URL");
  return text;
}

/** The options of `proxy`. */
const proxyLine = {
  command: "proxy",
  shared: ["port", "plugins", "data", "location", "settings", "inspect"],
  own: {
    host: valueOption("an address", keepText),
    store: valueOption("a postgres:// URL", postgresUrl),
    "anthropic-upstream": valueOption("a URL", httpUrl),
    "openai-upstream": valueOption("a URL", httpUrl),
    token: valueOption("a secret", keepText),
  },
} as const;

/** Parses `proxy [--port N] [--host H] [--plugins X]... [--data-dir DIR] [--store URL] [--anthropic-upstream URL] [--openai-upstream URL] [--location DIR] [--settings FILE] [--token T] [--inspect[=PORT]]`. */
export function parseProxyArgs(args: readonly string[], cwd: string, env: NodeJS.ProcessEnv = process.env): ProxyArgs {
  const { options } = parseCommandLine(args, cwd, proxyLine);
  const settings = loadSettings(options.settings, cwd, "proxy");
  const chosen = choosePlugins(options.plugins, settings.plugins, cwd);
  const token = options.token ?? env.CONTEXT_HOST_PROXY_TOKEN;
  const anthropic = options["anthropic-upstream"];
  const openai = options["openai-upstream"];
  return {
    port: options.port ?? defaultPort,
    host: options.host ?? "127.0.0.1",
    plugins: chosen.entries,
    ...(chosen.absentNote === undefined ? {} : { pluginsNote: chosen.absentNote }),
    dataDir: options.data ?? path.resolve(cwd, ".context-host"),
    ...(options.store === undefined ? {} : { store: options.store }),
    upstreams: { ...(anthropic === undefined ? {} : { anthropic }), ...(openai === undefined ? {} : { openai }) },
    location: options.location ?? cwd,
    settings,
    ...(token === undefined || token === "" ? {} : { token }),
    ...(options.inspect === undefined ? {} : { inspect: options.inspect }),
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
