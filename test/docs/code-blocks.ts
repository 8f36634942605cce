// Finds the code blocks of the project's Markdown (README.md and docs/*.md) that the doc
// tests run (decision 120): every ```ts and ```js block, with the `<!-- doc-test: … -->`
// note printed just before it, if any, saying how to run it.

import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";

/** How a block is tried; without a note a block is a `program`. */
export type BlockMode =
  /** Type-checked, then run with `node` in the document's working folder: exit 0, nothing on stderr. */
  | { readonly kind: "program" }
  /** A test file (saved as `file` when given): type-checked, then run with mocha in the document's working folder. */
  | { readonly kind: "mocha"; readonly file?: string }
  /** Saved as this file of the document's working folder (a plugin, say) before any block runs; type-checked. */
  | { readonly kind: "file"; readonly file: string }
  /** Type-checked only; `reason` says why it cannot run here (it needs a database server). */
  | { readonly kind: "type-check"; readonly reason: string }
  /** The block is printed from this project file (it runs with that file's tests): the file must contain it. */
  | { readonly kind: "same-as"; readonly file: string };

export interface CodeBlock {
  /** The document, relative to the project root: `README.md`, `docs/api.md`. */
  readonly doc: string;
  /** Line of the opening fence, 1-based. */
  readonly line: number;
  readonly language: "ts" | "js";
  readonly code: string;
  readonly mode: BlockMode;
}

const note = /^<!--\s*doc-test:\s*(.*?)\s*-->$/;

/** Reads a `<!-- doc-test: … -->` note; throws naming the place when it says nothing known. */
function parseMode(text: string, where: string): BlockMode {
  const [word = "", ...rest] = text.split(/\s+/);
  const argument = rest.join(" ");
  switch (word) {
    case "mocha":
      return argument === "" ? { kind: "mocha" } : { kind: "mocha", file: argument };
    case "file":
      if (argument !== "") return { kind: "file", file: argument };
      break;
    case "type-check":
      if (argument !== "") return { kind: "type-check", reason: argument };
      break;
    case "same-as":
      if (argument !== "") return { kind: "same-as", file: argument };
      break;
  }
  throw new Error(
    `${where}: doc-test note "${text}" is not one of: mocha [PATH], file PATH, type-check REASON, same-as PATH (none: a program)`,
  );
}

/** The ```ts and ```js blocks of one Markdown text. */
export function codeBlocks(doc: string, text: string): CodeBlock[] {
  const lines = text.split("\n");
  const blocks: CodeBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const fence = /^(`{3,})\s*([\w-]*)/.exec(lines[i] ?? "");
    if (fence === null) continue;
    const [, ticks = "```", language] = fence;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && !(lines[i] ?? "").startsWith(ticks); i++) body.push(lines[i] ?? "");
    if (language !== "ts" && language !== "js") continue;
    let before = start - 1;
    while (before >= 0 && (lines[before] ?? "").trim() === "") before--;
    const noted = note.exec((lines[before] ?? "").trim());
    const where = `${doc}:${start + 1}`;
    blocks.push({
      doc,
      line: start + 1,
      language,
      code: `${body.join("\n")}\n`,
      mode: noted === null ? { kind: "program" } : parseMode(noted[1] ?? "", where),
    });
  }
  return blocks;
}

/** The documents with code blocks: README.md and docs/*.md. */
export function documents(root: string): string[] {
  const docs = readdirSync(path.join(root, "docs"))
    .filter((name) => name.endsWith(".md"))
    .sort()
    .map((name) => `docs/${name}`);
  return ["README.md", ...docs];
}

/** Every block of every document, in document order. */
export function projectCodeBlocks(root: string): CodeBlock[] {
  return documents(root).flatMap((doc) => codeBlocks(doc, readFileSync(path.join(root, doc), "utf8")));
}
