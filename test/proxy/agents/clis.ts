// Runners for real agent CLIs (Claude Code, Codex, opencode, pi) pointed at a given base URL
// (the recorder or the context proxy), with a given working folder and HOME so nothing global
// is touched. The CLIs are installed on demand with npm into a cache folder outside the
// project: $CONTEXT_HOST_AGENT_CLIS, else <os.tmpdir()>/context-host-agent-clis.
// Used by the long agent tests (npm run test:long) and to capture fixtures; not by `npm test`.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdir, mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";

export type AgentName = "claude-code" | "codex" | "opencode" | "pi";

export const AGENT_NAMES: readonly AgentName[] = ["claude-code", "codex", "opencode", "pi"];

/** The fake API key every runner hands its CLI. */
export const FAKE_API_KEY = "sk-test-recorder-key";

/** Default model per CLI ("" = the CLI's own default). Every runner accepts another one. */
export const DEFAULT_MODELS: Record<AgentName, string> = {
  "claude-code": "claude-opus-4-8",
  codex: "",
  opencode: "claude-sonnet-4-5",
  pi: "test-model",
};

function opencodePackage(): string {
  const arch = process.arch === "x64" ? "x64" : process.arch === "arm64" ? "arm64" : process.arch;
  return `opencode-${process.platform === "win32" ? "windows" : process.platform}-${arch}`;
}

/** The npm package of each CLI. */
export function agentPackage(name: AgentName): string {
  const pkgs: Record<AgentName, string> = {
    "claude-code": "@anthropic-ai/claude-code",
    codex: "@openai/codex",
    opencode: opencodePackage(),
    pi: "@mariozechner/pi-coding-agent",
  };
  return pkgs[name];
}

/**
 * The versions the fixtures in test/proxy/fixtures were captured with. Another version (or
 * "latest") per CLI: CONTEXT_HOST_AGENT_CLI_VERSIONS="claude-code=latest,codex=0.172.0".
 * Note: on Node 20, a plain `npm i @anthropic-ai/claude-code` resolves to 2.1.197 (the newest
 * whose wrapper allows Node 20); 2.1.332 installs and runs fine (the CLI is a native binary).
 */
export const PINNED_VERSIONS: Record<AgentName, string> = {
  "claude-code": "2.1.332",
  codex: "0.171.0",
  opencode: "1.19.5",
  pi: "0.73.1",
};

export function wantedVersion(name: AgentName): string {
  for (const spec of (process.env.CONTEXT_HOST_AGENT_CLI_VERSIONS ?? "").split(",")) {
    const [k, v] = spec.split("=").map((x) => x.trim());
    if (k === name && v) return v;
  }
  return PINNED_VERSIONS[name];
}

/** The version installed in the cache folder, if any. */
export function installedVersion(name: AgentName, cacheDir = agentCliCacheDir()): string | undefined {
  try {
    const manifest = JSON.parse(
      readFileSync(path.join(cacheDir, "node_modules", agentPackage(name), "package.json"), "utf8"),
    ) as {
      version?: string;
    };
    return manifest.version;
  } catch {
    return undefined;
  }
}

/** The folder the CLIs are installed into. */
export function agentCliCacheDir(): string {
  return process.env.CONTEXT_HOST_AGENT_CLIS ?? path.join(os.tmpdir(), "context-host-agent-clis");
}

function binPath(name: AgentName, cacheDir: string): string {
  const nm = path.join(cacheDir, "node_modules");
  switch (name) {
    case "claude-code":
      return path.join(nm, ".bin", "claude");
    case "codex":
      return path.join(nm, ".bin", "codex");
    case "opencode":
      return path.join(nm, opencodePackage(), "bin", "opencode");
    case "pi":
      return path.join(nm, ".bin", "pi");
  }
}

/** Install the CLI into the cache folder if it is not there yet; returns the path of its executable. */
export function ensureAgentCli(name: AgentName, cacheDir = agentCliCacheDir()): string {
  const bin = binPath(name, cacheDir);
  const wanted = wantedVersion(name);
  if (existsSync(bin) && (wanted === "latest" || installedVersion(name, cacheDir) === wanted)) return bin;
  const spec = `${agentPackage(name)}@${wanted}`;
  const r = spawnSync("npm", ["install", "--no-audit", "--no-fund", "--prefix", cacheDir, spec], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
    timeout: 15 * 60_000,
  });
  if (r.status !== 0 || !existsSync(bin)) {
    throw new Error(`installing ${name} into ${cacheDir} failed (${spec}, exit ${r.status}):\n${r.stdout}\n${r.stderr}`);
  }
  return bin;
}

/** The CLI's version string (first line of `--version`). */
export function agentCliVersion(name: AgentName, home: string, cacheDir = agentCliCacheDir()): string {
  const r = spawnSync(ensureAgentCli(name, cacheDir), ["--version"], {
    encoding: "utf8",
    env: baseEnv(home, home, cacheDir),
    timeout: 60_000,
  });
  return `${r.stdout || r.stderr}`.trim().split("\n").pop() ?? "";
}

/**
 * Make a working folder like a user's project: `git init`, a README, AGENTS.md and CLAUDE.md
 * (so project instructions appear in the requests), one commit. Returns its path.
 */
export async function prepareWorkspace(dir?: string, instructions = "Always answer briefly."): Promise<string> {
  const cwd = dir ?? (await mkdtemp(path.join(os.tmpdir(), "agent-ws-")));
  await mkdir(cwd, { recursive: true });
  await writeFile(path.join(cwd, "README.md"), "# demo project\n\nA tiny project used to record agent requests.\n");
  await writeFile(path.join(cwd, "AGENTS.md"), `# Project instructions\n\n${instructions}\n`);
  await writeFile(path.join(cwd, "CLAUDE.md"), `# Project instructions\n\n${instructions}\n`);
  const git = (...args: string[]) =>
    spawnSync("git", args, {
      cwd,
      stdio: "ignore",
      env: {
        ...process.env,
        GIT_AUTHOR_NAME: "Test",
        GIT_AUTHOR_EMAIL: "test@example.com",
        GIT_COMMITTER_NAME: "Test",
        GIT_COMMITTER_EMAIL: "test@example.com",
      },
    });
  git("init", "-q", "-b", "main");
  git("add", "-A");
  git("commit", "-q", "-m", "initial");
  return cwd;
}

/** A fresh HOME folder. */
export async function makeHome(): Promise<string> {
  return mkdtemp(path.join(os.tmpdir(), "agent-home-"));
}

export interface AgentTurnOptions {
  /** Base URL of the model API stand-in, without /v1 (e.g. http://127.0.0.1:4321). */
  baseUrl: string;
  cwd: string;
  home: string;
  prompt: string;
  /** Continue the last session in this cwd/HOME instead of starting a new one. */
  continue?: boolean;
  model?: string;
  /** Kill the CLI (its whole process group) after this long. Default 120 s. */
  timeoutMs?: number;
  /** Extra environment variables; an empty value removes one the runner would set. */
  env?: Record<string, string>;
  cacheDir?: string;
}

export interface AgentTurnResult {
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  stdout: string;
  stderr: string;
  durationMs: number;
  command: string[];
}

function baseEnv(home: string, cwd: string, cacheDir: string): Record<string, string> {
  // A clean environment: nothing of the caller's API keys or agent settings leaks in.
  const env: Record<string, string> = {
    HOME: home,
    PWD: cwd,
    USER: process.env.USER ?? "test",
    PATH: [path.join(cacheDir, "node_modules", ".bin"), path.dirname(process.execPath), process.env.PATH ?? "/usr/bin:/bin"].join(
      path.delimiter,
    ),
    TERM: "dumb",
    LANG: "C.UTF-8",
    NO_COLOR: "1",
    CI: "1",
  };
  if (process.env.SSL_CERT_FILE) env.SSL_CERT_FILE = process.env.SSL_CERT_FILE;
  return env;
}

async function writeConfigs(name: AgentName, opts: AgentTurnOptions, model: string): Promise<void> {
  const base = opts.baseUrl.replace(/\/+$/, "");
  if (name === "codex") {
    const codexHome = path.join(opts.home, ".codex");
    await mkdir(codexHome, { recursive: true });
    await writeFile(
      path.join(codexHome, "config.toml"),
      [
        ...(model ? [`model = ${JSON.stringify(model)}`] : []),
        `model_provider = "local"`,
        `approval_policy = "never"`,
        `sandbox_mode = "read-only"`,
        "",
        "[model_providers.local]",
        `name = "local"`,
        `base_url = ${JSON.stringify(`${base}/v1`)}`,
        `wire_api = "responses"`,
        `env_key = "LOCAL_API_KEY"`,
        "request_max_retries = 0",
        "stream_max_retries = 0",
        "",
        `[projects.${JSON.stringify(opts.cwd)}]`,
        `trust_level = "trusted"`,
        "",
      ].join("\n"),
    );
  } else if (name === "opencode") {
    // Global config (XDG_CONFIG_HOME defaults to $HOME/.config) so the working folder stays clean.
    const dir = path.join(opts.home, ".config", "opencode");
    await mkdir(dir, { recursive: true });
    const config = {
      $schema: "https://opencode.ai/config.json",
      model: `anthropic/${model}`,
      autoupdate: false,
      share: "disabled",
      provider: { anthropic: { options: { baseURL: `${base}/v1`, apiKey: FAKE_API_KEY } } },
    };
    await writeFile(path.join(dir, "opencode.json"), `${JSON.stringify(config, null, 2)}\n`);
  } else if (name === "pi") {
    const dir = path.join(opts.home, ".pi", "agent");
    await mkdir(dir, { recursive: true });
    const models = {
      providers: {
        recorder: {
          baseUrl: `${base}/v1`,
          api: "openai-completions",
          apiKey: FAKE_API_KEY,
          models: [{ id: model, name: model, reasoning: false, input: ["text"], contextWindow: 128000, maxTokens: 16000 }],
        },
      },
    };
    await writeFile(path.join(dir, "models.json"), `${JSON.stringify(models, null, 2)}\n`);
  }
}

function commandFor(
  name: AgentName,
  bin: string,
  opts: AgentTurnOptions,
  model: string,
): { args: string[]; env: Record<string, string> } {
  const base = opts.baseUrl.replace(/\/+$/, "");
  switch (name) {
    case "claude-code":
      return {
        args: [bin, "-p", ...(opts.continue ? ["--continue"] : []), "--model", model, opts.prompt],
        env: {
          ANTHROPIC_BASE_URL: base,
          ANTHROPIC_API_KEY: FAKE_API_KEY,
          DISABLE_TELEMETRY: "1",
          DISABLE_AUTOUPDATER: "1",
          DISABLE_ERROR_REPORTING: "1",
          CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
        },
      };
    case "codex":
      return {
        args: opts.continue
          ? [bin, "exec", "--skip-git-repo-check", "resume", "--last", opts.prompt]
          : [bin, "exec", "--skip-git-repo-check", opts.prompt],
        env: { CODEX_HOME: path.join(opts.home, ".codex"), LOCAL_API_KEY: FAKE_API_KEY },
      };
    case "opencode":
      return {
        args: [bin, "run", ...(opts.continue ? ["-c"] : []), opts.prompt],
        env: {
          OPENCODE_DISABLE_AUTOUPDATE: "1",
          OPENCODE_DISABLE_LSP_DOWNLOAD: "1",
          OPENCODE_DISABLE_MODELS_FETCH: "1",
          OPENCODE_DISABLE_SHARE: "1",
          ANTHROPIC_API_KEY: FAKE_API_KEY,
        },
      };
    case "pi":
      return {
        args: [bin, "--offline", "--provider", "recorder", "--model", model, ...(opts.continue ? ["-c"] : []), "-p", opts.prompt],
        env: { PI_OFFLINE: "1" },
      };
  }
}

/** Run one turn of the CLI (a new session, or with `continue` the last one) and wait for it to end. */
export async function runAgentTurn(name: AgentName, opts: AgentTurnOptions): Promise<AgentTurnResult> {
  const cacheDir = opts.cacheDir ?? agentCliCacheDir();
  const bin = ensureAgentCli(name, cacheDir);
  const model = opts.model ?? DEFAULT_MODELS[name];
  await writeConfigs(name, opts, model);
  const { args, env } = commandFor(name, bin, opts, model);
  const timeoutMs = opts.timeoutMs ?? 120_000;
  const started = Date.now();
  const [cmd, ...rest] = args as [string, ...string[]];
  const childEnv: Record<string, string> = { ...baseEnv(opts.home, opts.cwd, cacheDir), ...env, ...opts.env };
  for (const [k, v] of Object.entries(childEnv)) if (v === "") delete childEnv[k];
  const child = spawn(cmd, rest, {
    cwd: opts.cwd,
    env: childEnv,
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (d: string) => {
    stdout += d;
  });
  child.stderr.setEncoding("utf8").on("data", (d: string) => {
    stderr += d;
  });
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    try {
      if (child.pid) process.kill(-child.pid, "SIGKILL");
    } catch {
      child.kill("SIGKILL");
    }
  }, timeoutMs);
  const { code, signal } = await new Promise<{ code: number | null; signal: string | null }>((resolve) => {
    child.on("close", (c, s) => resolve({ code: c, signal: s }));
    child.on("error", (err) => {
      stderr += String(err);
      resolve({ code: null, signal: null });
    });
  });
  clearTimeout(timer);
  return { exitCode: code, signal, timedOut, stdout, stderr, durationMs: Date.now() - started, command: args };
}
