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

/**
 * What locating reads of a bundle (`evaluate.ts`'s `Evaluable` holds it): its entry file, its code
 * and its folder.
 */
type Located = { readonly entry: string; readonly code: string; readonly baseDir: string };

// A distinct name per generation keeps stack frames (and source maps) apart.
export const bundleName = (bundle: Located, generation: number) => `${bundle.entry}#generation-${generation}`;

/** Maps stack frames of a generation's evaluated bundle code back to the plugin's own files. */
export class BundleLocations {
  readonly #bundle: Located;
  readonly #name: string;
  /** Parsed on the first error only: most generations never need it. */
  #map: SourceMap | null | undefined;

  constructor(bundle: Located, generation: number) {
    this.#bundle = bundle;
    this.#name = bundleName(bundle, generation);
  }

  #sourceMap(): SourceMap | null {
    if (this.#map === undefined) this.#map = inlineSourceMapOf(this.#bundle.code);
    return this.#map;
  }

  /**
   * The original location of the first stack frame inside the bundle, or its `cause`'s; never
   * throws (a `stack` may).
   */
  locate(error: unknown, depth = 0): Location | undefined {
    try {
      const stack = error instanceof Error ? (error.stack ?? "") : "";
      const escaped = this.#name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
      const frame = new RegExp(`${escaped}:(\\d+):(\\d+)`).exec(stack);
      // Not thrown in the bundle: where its cause was, a few causes deep at most.
      const hasCause = error instanceof Error && error.cause !== undefined;
      if (frame === null && hasCause && depth < 4) return this.locate(error.cause, depth + 1);
      const map = frame === null ? null : this.#sourceMap();
      if (frame === null || map === null) return undefined;
      const entry: Partial<SourceMapping> = map.findEntry(Number(frame[1]) - 1, Number(frame[2]) - 1);
      if (entry.originalSource === undefined || entry.originalLine === undefined) return undefined;
      const file = path.resolve(this.#bundle.baseDir, entry.originalSource);
      // Bundles leave their sources out (`bundle.ts`): the line is read from the author's file.
      const lineText = readQuietly(file)?.split("\n")[entry.originalLine];
      return { file, line: entry.originalLine + 1, column: entry.originalColumn ?? 0, lineText };
    } catch {
      return undefined;
    }
  }
}

function readQuietly(file: string): string | undefined {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
}

/** The source map esbuild put inline at the end of a bundle's code, if there is one. */
function inlineSourceMapOf(code: string): SourceMap | null {
  const match = /\/\/# sourceMappingURL=data:application\/json;base64,([A-Za-z0-9+/=]+)\s*$/.exec(code);
  if (match === null) return null;
  const text = Buffer.from(match[1] as string, "base64").toString("utf8");
  return new SourceMap(JSON.parse(text));
}
