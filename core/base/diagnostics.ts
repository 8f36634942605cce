// Owns diagnostics: structured records of what went wrong where (a plugin, an
// instruction file, the watcher), and their short code-frame rendering.

import path from "node:path";
import { Listeners } from "./listeners.ts";

/** Where in a plugin's life a diagnostic arose. */
export type DiagnosticPhase =
  | "bundle"
  | "evaluate"
  | "config"
  | "setup"
  | "namespace"
  | "load"
  | "value"
  | "baseline"
  | "update"
  | "removed"
  | "dispose"
  | "package"
  | "instructions"
  | "watch"
  | "connect"
  | "list"
  | "subscribe"
  | "read";

/** What a diagnostic is about: a plugin, an instruction file, the plugin folders' watcher, or an MCP server. */
export type DiagnosticOrigin = "plugin" | "instructions" | "watcher" | "mcp";

/** A structured diagnostic: a plugin's, an instruction file's or the watcher's problem. */
export interface Diagnostic {
  readonly origin: DiagnosticOrigin;
  /** The plugin's name (its namespace), or its file's base name before it is known; `core` for an instruction file, `host` for the watcher. */
  readonly plugin: string;
  readonly file: string;
  readonly line?: number;
  readonly column?: number;
  readonly key?: string;
  readonly phase: DiagnosticPhase;
  readonly message: string;
  /** The offending source line, when known. */
  readonly lineText?: string;
}

/**
 * Text made safe for a terminal: C0 and C1 control characters but tab (escape sequences, carriage
 * returns, bells, line breaks) and lone surrogates become visible `\u{…}` escapes, so plugin
 * text cannot move the cursor, recolour, or forge lines of the host's output.
 */
export function escapeControl(text: string): string {
  return text.replace(
    // biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
    /[\u0000-\u0008\u000a-\u001f\u007f-\u009f]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g,
    (c) => `\\u{${(c.codePointAt(0) as number).toString(16)}}`,
  );
}

/** A short, printable code frame: `file:line:column phase [key] message`, the line, a caret. Control characters escaped. */
export function formatDiagnostic(diagnostic: Diagnostic, cwd = process.cwd()): string {
  // An MCP server's diagnostic names its setting (`mcpServers.NAME`), not a file.
  const file = diagnostic.origin === "mcp" ? diagnostic.file : path.relative(cwd, diagnostic.file) || diagnostic.file;
  const where = escapeControl(file);
  const position = diagnostic.line === undefined ? "" : `:${diagnostic.line}:${(diagnostic.column ?? 0) + 1}`;
  const key = diagnostic.key === undefined ? "" : ` ${escapeControl(diagnostic.key)}`;
  const head = `${where}${position} [${escapeControl(diagnostic.plugin)} ${diagnostic.phase}${key}] ${escapeControl(diagnostic.message)}`;
  if (diagnostic.lineText === undefined || diagnostic.line === undefined) return head;
  const gutter = `${diagnostic.line} | `;
  const caret = `${" ".repeat(gutter.length - 2)}| ${" ".repeat(Math.max(0, diagnostic.column ?? 0))}^`;
  return `${head}\n${gutter}${escapeControl(diagnostic.lineText)}\n${caret}`;
}

/** A diagnostic as the channel keeps it: how often it was reported and whether it still holds. */
export interface DiagnosticRecord {
  readonly diagnostic: Diagnostic;
  /** How many times this identical diagnostic was reported. */
  readonly count: number;
}

/** What makes two diagnostics the same one: the channel keeps one record per identity. */
export const diagnosticIdentity = (d: Diagnostic): string =>
  JSON.stringify([d.plugin, d.file, d.phase, d.key ?? null, d.line ?? null, d.column ?? null, d.message]);

/**
 * The one diagnostics channel of a host: plugins, instruction files and the watcher
 * report here. A repeated identical diagnostic counts up instead of appending, so a
 * loader that throws at every boundary is one record, not one per boundary. `current`
 * is what still holds: a reporter resolves its subject when the problem is gone (a
 * plugin that loads again, a file that is readable again).
 */
export class Diagnostics {
  readonly #records = new Map<string, { diagnostic: Diagnostic; count: number }>();
  readonly #current = new Map<string, Diagnostic>();
  readonly #listeners = new Listeners<Diagnostic>();

  /** Reports a diagnostic; listeners hear only the first of identical ones. Returns whether it was new. */
  report(diagnostic: Diagnostic): boolean {
    const id = diagnosticIdentity(diagnostic);
    const known = this.#records.get(id);
    this.#current.set(id, known?.diagnostic ?? diagnostic);
    if (known !== undefined) {
      known.count++;
      return false;
    }
    this.#records.set(id, { diagnostic, count: 1 });
    this.#listeners.emit(diagnostic);
    return true;
  }

  /** Every distinct diagnostic so far, oldest first. */
  get history(): readonly Diagnostic[] {
    return [...this.#records.values()].map((record) => record.diagnostic);
  }

  /** Every distinct diagnostic with its count, oldest first. */
  records(): DiagnosticRecord[] {
    return [...this.#records.values()].map((record) => ({ diagnostic: record.diagnostic, count: record.count }));
  }

  /** The problems that still hold, oldest first. */
  current(): Diagnostic[] {
    return [...this.#current.values()];
  }

  /** The matching problems no longer hold (they stay in the history). */
  resolve(matches: (diagnostic: Diagnostic) => boolean): void {
    for (const [id, diagnostic] of this.#current) if (matches(diagnostic)) this.#current.delete(id);
  }

  /** Hears every new distinct diagnostic. Returns an unsubscribe. */
  subscribe(listener: (diagnostic: Diagnostic) => void): () => void {
    return this.#listeners.add(listener);
  }
}
