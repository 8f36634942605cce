// Owns the arguments of `context-host dev`.

import path from "node:path";
import { choosePlugins } from "../plugin-entries.ts";
import { type CliSettings, loadSettings } from "../settings.ts";
import { optionValue, pluginEntry, portValue, UsageInvalid } from "../usage.ts";

/** The providers `dev` can talk to: the scripted echo, and the two real adapters. */
export const devProviders = ["scripted", "anthropic", "openai"] as const;
export type DevProviderName = (typeof devProviders)[number];

/** The model the scripted provider answers as. */
export const scriptedModel = "scripted-echo";

export interface DevArgs {
  readonly plugins: readonly string[];
  /** Said once, in the banner: no plugin was named and ./plugins does not exist. */
  readonly pluginsNote?: string;
  readonly provider: DevProviderName;
  readonly model: string;
  readonly baseUrl?: string;
  readonly settings: CliSettings;
  readonly dataDir: string;
  /** `--inspect[=PORT]`: serve the browser inspector (port 0 or none: any free port). */
  readonly inspect?: { readonly port?: number };
}

const fail = (reason: string) => new UsageInvalid({ command: "dev", reason });

export function isDevProvider(name: string): name is DevProviderName {
  return (devProviders as readonly string[]).includes(name);
}

/** Parses `dev [--plugins DIR|FILE|PACKAGE]… [--provider P --model M] [--base-url URL] [--settings FILE] [--data DIR] [--inspect[=PORT]]`. */
export function parseDevArgs(args: readonly string[], cwd: string): DevArgs {
  const plugins: string[] = [];
  let provider: string | undefined;
  let model: string | undefined;
  let baseUrl: string | undefined;
  let settingsFile: string | undefined;
  let dataDir = path.join(cwd, ".context-host");
  let inspect: { port?: number } | undefined;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    if (arg === "--plugins")
      plugins.push(pluginEntry(optionValue(args, ++i, arg, "a folder, a plugin file or a package name", "dev"), cwd, "dev"));
    else if (arg === "--provider") provider = optionValue(args, ++i, arg, `one of ${devProviders.join(", ")}`, "dev");
    else if (arg === "--model") model = optionValue(args, ++i, arg, "a model name", "dev");
    else if (arg === "--base-url") baseUrl = optionValue(args, ++i, arg, "a URL", "dev");
    else if (arg === "--settings" || arg === "--config") settingsFile = optionValue(args, ++i, arg, "a file", "dev");
    else if (arg === "--data") dataDir = path.resolve(cwd, optionValue(args, ++i, arg, "a folder", "dev"));
    else if (arg === "--inspect") inspect = {};
    else if (arg.startsWith("--inspect=")) inspect = { port: portValue(arg.slice("--inspect=".length), arg, "dev") };
    else throw fail(`unknown argument ${JSON.stringify(arg)}`);
  }
  const chosen = provider ?? "scripted";
  if (!isDevProvider(chosen)) throw fail(`--provider ${chosen}: not a provider (use ${devProviders.join(", ")})`);
  if (chosen !== "scripted" && model === undefined) throw fail(`--provider ${chosen} needs --model M`);
  if (chosen === "scripted" && baseUrl !== undefined) throw fail("--base-url needs --provider anthropic or openai");
  if (baseUrl !== undefined) {
    let url: URL;
    try {
      url = new URL(baseUrl);
    } catch {
      throw fail(`--base-url ${baseUrl}: not a URL`);
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") throw fail(`--base-url ${baseUrl}: not an http(s) URL`);
  }
  const settings = loadSettings(settingsFile, cwd, "dev");
  const pluginsChosen = choosePlugins(plugins, settings.plugins, cwd);
  return {
    plugins: pluginsChosen.entries,
    ...(pluginsChosen.absentNote === undefined ? {} : { pluginsNote: pluginsChosen.absentNote }),
    provider: chosen,
    model: model ?? scriptedModel,
    ...(baseUrl === undefined ? {} : { baseUrl }),
    settings,
    dataDir,
    ...(inspect === undefined ? {} : { inspect }),
  };
}
