// Owns plugin diagnostics: structured records of what went wrong where, and their
// short code-frame rendering. Locations come from esbuild or from the bundle's
// inline source map, so they point at the plugin author's own file and line.

import { readFileSync } from "node:fs";
import { SourceMap } from "node:module";
import path from "node:path";

/** Where in a plugin's life a diagnostic arose. */
export type DiagnosticPhase =
  | "discover"
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
  | "instructions";

/** A structured plugin diagnostic. */
export interface Diagnostic {
  /** The plugin's name (its namespace), or its file's base name before it is known. */
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

/** A location in an original source file (1-based line, 0-based column). */
export interface Location {
  readonly file: string;
  readonly line: number;
  readonly column: number;
  readonly lineText?: string;
}

/** Maps stack frames of evaluated bundle code back to the plugin's own files. */
export class BundleLocations {
  /** Parsed on the first error only: most generations never need it. */
  #parsed: { map: SourceMap; sources: readonly string[]; contents: readonly (string | null)[] } | null | undefined;

  constructor(
    readonly bundleName: string,
    readonly code: string,
    readonly baseDir: string,
  ) {}

  #sourceMap() {
    if (this.#parsed !== undefined) return this.#parsed;
    const match = /\/\/# sourceMappingURL=data:application\/json;base64,([A-Za-z0-9+/=]+)\s*$/.exec(this.code);
    if (match === null) {
      this.#parsed = null;
      return null;
    }
    const payload = JSON.parse(Buffer.from(match[1] as string, "base64").toString("utf8"));
    this.#parsed = {
      map: new SourceMap(payload),
      sources: (payload.sources ?? []).map((s: string) => path.resolve(this.baseDir, s)),
      contents: payload.sourcesContent ?? [],
    };
    return this.#parsed;
  }

  /**
   * The original location of the first stack frame inside the bundle, if any. An error
   * made by the host about the plugin's code (a `RenderError` around what a renderer
   * threw) is located by its `cause`.
   */
  locate(error: unknown, depth = 0): Location | undefined {
    const stack = error instanceof Error ? (error.stack ?? "") : "";
    const escaped = this.bundleName.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    const frame = new RegExp(`${escaped}:(\\d+):(\\d+)`).exec(stack);
    if (frame === null && error instanceof Error && error.cause !== undefined && depth < 4)
      return this.locate(error.cause, depth + 1);
    const parsed = frame === null ? null : this.#sourceMap();
    if (frame === null || parsed === null) return undefined;
    const entry = parsed.map.findEntry(Number(frame[1]) - 1, Number(frame[2]) - 1) as {
      originalSource?: string;
      originalLine?: number;
      originalColumn?: number;
    };
    if (entry.originalSource === undefined || entry.originalLine === undefined) return undefined;
    const file = path.resolve(this.baseDir, entry.originalSource);
    const index = parsed.sources.indexOf(file);
    const content = index >= 0 ? parsed.contents[index] : undefined;
    const lineText = (content ?? readQuietly(file))?.split("\n")[entry.originalLine];
    return { file, line: entry.originalLine + 1, column: entry.originalColumn ?? 0, lineText };
  }
}

function readQuietly(file: string): string | undefined {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
}

/** The message of any thrown value. */
export function messageOf(error: unknown): string {
  if (error instanceof AggregateError) return [error.message, ...error.errors.map(messageOf)].join("; ");
  return error instanceof Error ? error.message : String(error);
}

/** A short, printable code frame: `file:line:column phase [key] message`, the line, a caret. */
export function formatDiagnostic(diagnostic: Diagnostic, cwd = process.cwd()): string {
  const where = path.relative(cwd, diagnostic.file) || diagnostic.file;
  const position = diagnostic.line === undefined ? "" : `:${diagnostic.line}:${(diagnostic.column ?? 0) + 1}`;
  const key = diagnostic.key === undefined ? "" : ` ${diagnostic.key}`;
  const head = `${where}${position} [${diagnostic.plugin} ${diagnostic.phase}${key}] ${diagnostic.message}`;
  if (diagnostic.lineText === undefined || diagnostic.line === undefined) return head;
  const gutter = `${diagnostic.line} | `;
  const caret = `${" ".repeat(gutter.length - 2)}| ${" ".repeat(Math.max(0, diagnostic.column ?? 0))}^`;
  return `${head}\n${gutter}${diagnostic.lineText}\n${caret}`;
}
