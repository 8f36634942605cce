// Owns the locations of plugin diagnostics, from esbuild or the bundle's inline source map:
// the plugin author's own file and line.

import { readFileSync } from "node:fs";
import { SourceMap, type SourceMapping } from "node:module";
import path from "node:path";

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

  /** The original location of the first stack frame inside the bundle; an error without one is located by its `cause`. */
  locate(error: unknown, depth = 0): Location | undefined {
    const stack = error instanceof Error ? (error.stack ?? "") : "";
    const escaped = this.bundleName.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    const frame = new RegExp(`${escaped}:(\\d+):(\\d+)`).exec(stack);
    if (frame === null && error instanceof Error && error.cause !== undefined && depth < 4)
      return this.locate(error.cause, depth + 1);
    const parsed = frame === null ? null : this.#sourceMap();
    if (frame === null || parsed === null) return undefined;
    const entry: Partial<SourceMapping> = parsed.map.findEntry(Number(frame[1]) - 1, Number(frame[2]) - 1);
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
