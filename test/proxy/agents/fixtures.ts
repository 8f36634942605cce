// Turning recorded requests into committed fixtures: credential headers redacted, the
// temporary working folder, HOME and CLI install folder replaced by stable placeholders.
import path from "node:path";
import { agentCliCacheDir } from "./clis.ts";
import type { RecordedRequest } from "./recording-upstream.ts";

export const WORKSPACE_PLACEHOLDER = "/work/project";
export const HOME_PLACEHOLDER = "/home/user";
export const CLI_DIR_PLACEHOLDER = "/opt/agent-clis";

export const fixturesRoot = path.resolve(import.meta.dirname, "..", "fixtures");

export interface Fixture {
  method: string;
  path: string;
  headers: Record<string, string | string[]>;
  body: unknown;
}

/** Header names whose values are credentials. */
export function isCredentialHeader(name: string): boolean {
  return /authorization|api[-_]?key|key|token|cookie|secret|session[-_]?key/i.test(name);
}

/** Claude Code's folder-name form of a path ("/tmp/x.y" -> "-tmp-x-y"). */
function slug(p: string): string {
  return p.replace(/[^a-zA-Z0-9]/g, "-");
}

/** Replace the temporary folders by placeholders everywhere in a JSON-able value. */
export function replacePaths<T>(value: T, cwd: string, home: string, cliDir = agentCliCacheDir()): T {
  let text = JSON.stringify(value);
  const pairs: [string, string][] = [
    [cliDir, CLI_DIR_PLACEHOLDER],
    [cwd, WORKSPACE_PLACEHOLDER],
    [home, HOME_PLACEHOLDER],
    [slug(cwd), slug(WORKSPACE_PLACEHOLDER)],
    [slug(home), slug(HOME_PLACEHOLDER)],
    [path.basename(cwd), path.basename(WORKSPACE_PLACEHOLDER)],
  ];
  for (const [from, to] of pairs) text = text.split(from).join(to);
  return JSON.parse(text) as T;
}

export function toFixture(r: RecordedRequest, cwd: string, home: string): Fixture {
  const headers: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(r.headers)) headers[k] = isCredentialHeader(k) ? "REDACTED" : v;
  return replacePaths({ method: r.method, path: r.path, headers, body: r.body }, cwd, home);
}

/** The part of a fixture file name that says what the request was. */
export function label(r: Pick<RecordedRequest, "kind" | "method" | "path">): string {
  const p = (r.path.split("?")[0] ?? "").replace(/^\/+/, "");
  if (r.kind === "anthropic-messages") return "messages";
  if (r.kind === "anthropic-count-tokens") return "count-tokens";
  if (r.kind === "responses") return "responses";
  if (r.kind === "chat-completions") return "chat-completions";
  return `${r.method.toLowerCase()}-${p.replace(/[^a-zA-Z0-9]+/g, "-")}`.replace(/-+$/, "");
}
