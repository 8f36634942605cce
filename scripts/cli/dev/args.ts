// Owns the arguments of `context-host dev`.

import path from "node:path";
import { httpUrl, invalidValue, parseCommandLine, type ReadContext, valueOption } from "../arguments.ts";
import { choosePlugins } from "../plugin-entries.ts";
import { type CliSettings, loadSettings } from "../settings.ts";
import { UsageInvalid } from "../usage.ts";

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

/** A `--provider` value: one of `devProviders`. */
function providerName(text: string, at: ReadContext): DevProviderName {
  if (!isDevProvider(text)) throw invalidValue(text, at, `not a provider (use ${devProviders.join(", ")})`);
  return text;
}

/** The options of `dev`. */
const devLine = {
  command: "dev",
  shared: ["plugins", "model", "settings", "data", "inspect"],
  own: {
    provider: valueOption(`one of ${devProviders.join(", ")}`, providerName),
    "base-url": valueOption("a URL", httpUrl),
  },
} as const;

/** Parses `dev [--plugins DIR|FILE|PACKAGE]… [--provider P --model M] [--base-url URL] [--settings FILE] [--data DIR] [--inspect[=PORT]]`. */
export function parseDevArgs(args: readonly string[], cwd: string): DevArgs {
  const { options } = parseCommandLine(args, cwd, devLine);
  const provider = options.provider ?? "scripted";
  const model = options.model;
  const baseUrl = options["base-url"];
  if (provider !== "scripted" && model === undefined) throw fail(`--provider ${provider} needs --model M`);
  if (provider === "scripted" && baseUrl !== undefined) throw fail("--base-url needs --provider anthropic or openai");
  const settings = loadSettings(options.settings, cwd, "dev");
  const pluginsChosen = choosePlugins(options.plugins, settings.plugins, cwd);
  return {
    plugins: pluginsChosen.entries,
    ...(pluginsChosen.absentNote === undefined ? {} : { pluginsNote: pluginsChosen.absentNote }),
    provider,
    model: model ?? scriptedModel,
    ...(baseUrl === undefined ? {} : { baseUrl }),
    settings,
    dataDir: options.data ?? path.join(cwd, ".context-host"),
    ...(options.inspect === undefined ? {} : { inspect: options.inspect }),
  };
}
