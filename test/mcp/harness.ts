// Test harness of the MCP sources: a host over real MCP servers (the stdio fixture as a
// spawned process, the Streamable HTTP fixture on 127.0.0.1 in this process), a provider
// that records requests, and a way to wait for a condition until a deadline.

import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, renameSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { buildSync } from "esbuild";
import { createHost, type Host, type HostOptions, type Provider, type ProviderRequest } from "../../core/index.ts";
import type { StdioServerSettings } from "../../core/mcp/settings.ts";
import { startHttpWorld, type WorldCommand, type WorldState, type WorldStats } from "../../scripts/bench/mcp-world.ts";

export const stdioFixture = path.join(import.meta.dirname, "fixtures", "stdio-server.ts");

let bundled: string | undefined;
/**
 * The stdio fixture as one JavaScript file (built once per test process, kept in the temp
 * folder by the hash of its source): a spawn then starts `node` on it, not tsx compiling the
 * fixture and the SDK again (about 1 s less per server the tests start).
 */
function stdioFixtureProgram(): string {
  if (bundled !== undefined && existsSync(bundled)) return bundled;
  const digest = createHash("sha256").update(readFileSync(stdioFixture)).update(readFileSync(worldModule)).digest("hex");
  const file = path.join(os.tmpdir(), `context-host-mcp-fixture-${digest.slice(0, 16)}.mjs`);
  if (!existsSync(file)) {
    const partial = `${file}.${process.pid}.tmp`;
    buildSync({
      entryPoints: [stdioFixture],
      bundle: true,
      platform: "node",
      format: "esm",
      target: "node20",
      outfile: partial,
      logLevel: "error",
      // CommonJS dependencies of the SDK call require: give the module one.
      banner: {
        js: 'import { createRequire as __contextHostRequire } from "node:module"; const require = __contextHostRequire(import.meta.url);',
      },
    });
    renameSync(partial, file);
  }
  bundled = file;
  return file;
}
const worldModule = path.join(import.meta.dirname, "../../scripts/bench/mcp-world.ts");

/** Polls `condition` until it holds; past `ms` it rejects saying which wait missed its deadline. */
export async function until(what: string, condition: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`deadline of ${ms} ms fired waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** The stdio fixture: its settings, and control over the process serving it now. */
export class StdioFixture {
  readonly controlFile: string;
  readonly settings: StdioServerSettings;

  constructor(folder: string, state: WorldState, extra: Partial<StdioServerSettings> = {}, env: Record<string, string> = {}) {
    this.controlFile = path.join(folder, `control-${Math.random().toString(36).slice(2)}.json`);
    this.settings = {
      command: process.execPath,
      args: [stdioFixtureProgram()],
      env: { FIXTURE_STATE: JSON.stringify(state), FIXTURE_CONTROL: this.controlFile, ...env },
      // A boundary waits this long for the spawn (tsx) to connect, so the first Baseline has the server's sources.
      deadlineMs: 10_000,
      ...extra,
    };
  }

  /** The running process's control port and id (after it wrote them). */
  async process(): Promise<{ port: number; pid: number }> {
    await until("the fixture's control file", () => existsSync(this.controlFile));
    return JSON.parse(readFileSync(this.controlFile, "utf8"));
  }

  async send(command: WorldCommand | { op: "crash" }): Promise<WorldStats | null> {
    const { port } = await this.process();
    const response = await fetch(`http://127.0.0.1:${port}`, { method: "POST", body: JSON.stringify(command) });
    return (await response.json()) as WorldStats | null;
  }

  async stats(): Promise<WorldStats> {
    return (await this.send({ op: "stats" })) as WorldStats;
  }
}

/** The Streamable HTTP fixture on 127.0.0.1, in this process. */
export const startHttpFixture = startHttpWorld;

/** A host over MCP servers with a provider that records each request; closed and cleaned by `close`. */
export class McpHostHarness {
  readonly requests: ProviderRequest[] = [];
  readonly folder = mkdtempSync(path.join(os.tmpdir(), "context-host-mcp-"));
  readonly #closers: Array<() => Promise<void>> = [];

  async host(options: Partial<HostOptions>): Promise<Host> {
    const provider: Provider = {
      send: async (request) => {
        this.requests.push(request);
        return { text: "ok" };
      },
    };
    const host = await createHost({
      dataDir: path.join(this.folder, `data-${this.#closers.length}`),
      providers: { scripted: provider },
      builtins: false,
      plugins: [],
      watch: false,
      onDiagnostic: false,
      ...options,
    });
    this.#closers.push(() => host.close());
    return host;
  }

  onClose(close: () => Promise<void>): void {
    this.#closers.push(close);
  }

  /** A session's boundary with one prompt; the request the provider got. */
  async turn(host: Host, id: string, text = "go"): Promise<ProviderRequest> {
    await host.prompt(id, text);
    const result = await host.step(id);
    if (result.kind !== "replied") throw new Error(`step returned ${result.kind}`);
    return result.request;
  }

  async close(): Promise<void> {
    for (const close of this.#closers.reverse()) await close().catch(() => {});
    this.#closers.length = 0;
    rmSync(this.folder, { recursive: true, force: true });
  }
}

/** The Mid-Conversation System Messages of a request, oldest first. */
export function systemUpdates(request: ProviderRequest): string[] {
  return request.messages.flatMap((message) => (message.role === "system-update" ? [message.text] : []));
}
