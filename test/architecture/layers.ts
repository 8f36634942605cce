// The layer rules, in one place. Each layer is a folder; it may import only the
// layers listed for it (always earlier ones), and files form no import cycle at all.
// `docs/architecture.md` draws the same table. Imports are read from tokens (strings,
// templates, comments and regular expressions read whole), worker entries given as
// `new URL("./x.ts", import.meta.url)` included; a layer's file importing the package by
// its own name (`context-host/store`) is refused and followed to the entry file. The same
// tokens show which fields a file writes (`farWritesOf`).

import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";

export interface Layer {
  readonly name: string;
  /** Folders (or single files) relative to the project root. */
  readonly paths: readonly string[];
  /** Layers this one may import. */
  readonly imports: readonly string[];
  /** Bare module specifiers (packages, `node:` built-ins) it may import; `*` for any. */
  readonly packages: readonly string[] | "*";
}

export const layers: readonly Layer[] = [
  { name: "base", paths: ["core/base"], imports: [], packages: ["node:fs", "node:path"] },
  {
    name: "system-context",
    paths: ["core/system-context"],
    imports: [],
    packages: ["typebox", "typebox/compile", "typebox/value"],
  },
  { name: "registry", paths: ["core/registry"], imports: ["base", "system-context"], packages: [] },
  { name: "plugins", paths: ["core/plugins"], imports: ["base", "system-context", "registry"], packages: "*" },
  { name: "sources", paths: ["core/sources"], imports: ["base", "system-context", "registry"], packages: "*" },
  { name: "mcp", paths: ["core/mcp"], imports: ["base", "system-context", "registry"], packages: "*" },
  { name: "session", paths: ["core/session"], imports: ["base", "system-context", "registry", "sources"], packages: "*" },
  { name: "providers", paths: ["core/providers"], imports: ["base", "system-context", "session"], packages: "*" },
  {
    name: "host",
    paths: ["core/host"],
    imports: ["base", "system-context", "registry", "plugins", "sources", "mcp", "session", "providers"],
    packages: "*",
  },
  {
    name: "proxy",
    paths: ["core/proxy"],
    imports: ["base", "system-context", "registry", "plugins", "sources", "mcp", "session", "providers", "host"],
    packages: "*",
  },
  {
    name: "conformance",
    paths: ["core/conformance"],
    imports: ["base", "system-context", "registry", "plugins", "sources", "mcp", "session", "providers", "host"],
    packages: "*",
  },
  {
    name: "entry",
    // One file per package entry point (package.json `exports`).
    paths: [
      "core/index.ts",
      "core/plugin.ts",
      "core/system-context.ts",
      "core/providers.ts",
      "core/store.ts",
      "core/conformance.ts",
      "core/ai-sdk.ts",
      "core/openai-agents.ts",
    ],
    imports: [
      "base",
      "system-context",
      "registry",
      "plugins",
      "sources",
      "mcp",
      "session",
      "providers",
      "host",
      "proxy",
      "conformance",
    ],
    packages: [],
  },
  {
    name: "cli",
    paths: ["scripts/cli"],
    // The package's entries only: what the command line needs, users need (issue 33, decision 153).
    imports: ["entry"],
    packages: "*",
  },
];

/** A token of TypeScript source, as far as finding imports needs: comments and whitespace are dropped. */
export interface Token {
  readonly kind: "name" | "string" | "template" | "punct" | "number" | "regex";
  readonly text: string;
  /** A string's (or a template without substitutions') contents. */
  readonly value?: string;
}

/** Words after which a `/` starts a regular expression rather than a division. */
const beforeExpression = new Set([
  "return",
  "typeof",
  "instanceof",
  "in",
  "of",
  "new",
  "delete",
  "void",
  "throw",
  "case",
  "do",
  "else",
  "yield",
  "await",
]);

const nameStart = /[\p{ID_Start}$_\\]/u;
const namePart = /[\p{ID_Continue}$\\]|\u200c|\u200d/u;

/**
 * Splits source into tokens: strings and templates are read whole (so nothing inside them
 * is taken for code or a comment), comments are skipped, a regular expression literal is
 * one token. Code inside a template's `${…}` is tokenized like any other code.
 */
export function tokensOf(code: string): Token[] {
  const tokens: Token[] = [];
  /** For each open `${`, the brace depth it was opened at: its `}` resumes the template. */
  const templates: number[] = [];
  let depth = 0;
  let i = 0;
  const readTemplate = (from: number): void => {
    // `from` is just after the opening backtick or the `}` closing a substitution.
    let value = "";
    let j = from;
    while (j < code.length) {
      const c = code[j] as string;
      if (c === "\\") {
        value += code.slice(j, j + 2);
        j += 2;
      } else if (c === "`") {
        tokens.push({ kind: "template", text: code.slice(from - 1, j + 1), ...(code[from - 1] === "`" ? { value } : {}) });
        i = j + 1;
        return;
      } else if (c === "$" && code[j + 1] === "{") {
        tokens.push({ kind: "punct", text: "${" });
        templates.push(depth);
        depth++;
        i = j + 2;
        return;
      } else {
        value += c;
        j++;
      }
    }
    i = j;
  };
  while (i < code.length) {
    const c = code[i] as string;
    if (/\s/.test(c)) {
      i++;
    } else if (c === "/" && code[i + 1] === "/") {
      const end = code.indexOf("\n", i);
      i = end === -1 ? code.length : end;
    } else if (c === "/" && code[i + 1] === "*") {
      const end = code.indexOf("*/", i + 2);
      i = end === -1 ? code.length : end + 2;
    } else if (c === '"' || c === "'") {
      let j = i + 1;
      let value = "";
      while (j < code.length && code[j] !== c && code[j] !== "\n") {
        if (code[j] === "\\") {
          value += code[j + 1] ?? "";
          j += 2;
        } else {
          value += code[j];
          j++;
        }
      }
      tokens.push({ kind: "string", text: code.slice(i, j + 1), value });
      i = j + 1;
    } else if (c === "`") {
      readTemplate(i + 1);
    } else if (c === "}" && templates.at(-1) === depth - 1) {
      templates.pop();
      depth--;
      readTemplate(i + 1);
    } else if (nameStart.test(c) || (c === "#" && nameStart.test(code[i + 1] ?? ""))) {
      let j = i + 1;
      while (j < code.length && namePart.test(code[j] as string)) j++;
      tokens.push({ kind: "name", text: code.slice(i, j) });
      i = j;
    } else if (/[0-9]/.test(c) || (c === "." && /[0-9]/.test(code[i + 1] ?? ""))) {
      let j = i + 1;
      while (j < code.length && /[\w.]/.test(code[j] as string)) j++;
      tokens.push({ kind: "number", text: code.slice(i, j) });
      i = j;
    } else if (c === "/" && startsExpression(tokens.at(-1))) {
      let j = i + 1;
      let inClass = false;
      while (j < code.length && code[j] !== "\n") {
        const r = code[j];
        if (r === "\\") j++;
        else if (r === "[") inClass = true;
        else if (r === "]") inClass = false;
        else if (r === "/" && !inClass) break;
        j++;
      }
      j++;
      while (j < code.length && /[a-z]/i.test(code[j] as string)) j++;
      tokens.push({ kind: "regex", text: code.slice(i, j) });
      i = j;
    } else {
      if (c === "{") depth++;
      else if (c === "}") depth--;
      tokens.push({ kind: "punct", text: c });
      i++;
    }
  }
  return tokens;
}

/** Whether a `/` after `previous` starts a regular expression (an operand is expected there). */
function startsExpression(previous: Token | undefined): boolean {
  if (previous === undefined) return true;
  switch (previous.kind) {
    case "name":
      return beforeExpression.has(previous.text);
    case "punct":
      return previous.text !== ")" && previous.text !== "]" && previous.text !== "}";
    default:
      return false;
  }
}

const isName = (token: Token | undefined, text?: string): boolean =>
  token?.kind === "name" && (text === undefined || token.text === text);
const isPunct = (token: Token | undefined, text: string): boolean => token?.kind === "punct" && token.text === text;
/** A string literal, or a template without substitutions: its contents. */
const literalOf = (token: Token | undefined): string | undefined =>
  token?.kind === "string" || token?.kind === "template" ? token.value : undefined;

/**
 * The specifier of an `import … from "x"` / `export … from "x"` clause starting at `start`
 * (just after the keyword), or undefined when the tokens there are not such a clause.
 */
function clauseSpecifier(tokens: readonly Token[], start: number): string | undefined {
  let braces = 0;
  for (let j = start; j < tokens.length; j++) {
    const token = tokens[j] as Token;
    if (token.kind === "name") {
      if (braces === 0 && token.text === "from" && literalOf(tokens[j + 1]) !== undefined) return literalOf(tokens[j + 1]);
      // A new statement: the clause had no `from`.
      if (braces === 0 && j > start && (token.text === "import" || token.text === "export")) return undefined;
    } else if (token.kind === "punct") {
      if (token.text === "{") braces++;
      else if (token.text === "}") {
        braces--;
        if (braces < 0) return undefined;
        if (braces === 0 && !isName(tokens[j + 1], "from") && !isPunct(tokens[j + 1], ",")) return undefined;
      } else if (token.text !== "*" && token.text !== ",") return undefined;
    } else if (token.kind === "string") {
      // `import { "a-b" as ab }`: a string name inside the braces only.
      if (braces === 0) return undefined;
    } else return undefined;
  }
  return undefined;
}

/** A module file's name: what `new URL(…, import.meta.url)` must name to be an import (not a folder or a data file). */
const moduleFile = /\.(?:[cm]?[jt]s|tsx)$/;

/**
 * The module files in `new URL(…, import.meta.url)`'s first argument, `open` being its `(`:
 * a literal (`"x.ts"` is `./x.ts`), or the relative paths among the literals of an expression
 * (`isTs ? "./entry.ts" : "./entry.js"`; the compiled `.js` twin of a `.ts` one is left out).
 */
function urlSpecifiers(tokens: readonly Token[], open: number): string[] {
  const found: string[] = [];
  let parens = 0;
  let j = open + 1;
  for (; j < tokens.length; j++) {
    const token = tokens[j] as Token;
    if (token.kind === "punct" && "([{".includes(token.text)) parens++;
    else if (token.kind === "punct" && ")]}".includes(token.text)) {
      if (parens === 0) return [];
      parens--;
    } else if (parens === 0 && isPunct(token, ",")) break;
    else {
      const value = literalOf(token);
      if (value !== undefined) found.push(value);
    }
  }
  const base = tokens
    .slice(j + 1, j + 6)
    .map((t) => t.text)
    .join("");
  if (base !== "import.meta.url" || !/^[),]$/.test(tokens[j + 6]?.text ?? "")) return [];
  let files: string[];
  if (j === open + 2 && found.length === 1) {
    const only = found[0] as string;
    files = /^[a-z][a-z0-9+.-]*:|^\//i.test(only) ? [] : [only.startsWith(".") ? only : `./${only}`];
  } else files = found.filter((value) => value.startsWith("./") || value.startsWith("../"));
  files = files.filter((file) => moduleFile.test(file));
  return files.filter((file) => !(file.endsWith(".js") && files.includes(file.replace(/\.js$/, ".ts"))));
}

/** A specifier a source file names, and whether it names a worker entry (`new URL(…, import.meta.url)`) rather than a module it imports. */
interface Named {
  readonly specifier: string;
  readonly isWorkerEntry: boolean;
}

/**
 * The module specifiers a source file imports: static `import`/`export … from`, side-effect
 * `import "x"`, `import("x")` (type positions included), `import.meta.resolve("x")`, and the
 * files of `new URL("./x.ts", import.meta.url)` (worker entries). Text in comments, strings
 * and templates is never taken for an import.
 */
export function importsOf(code: string): string[] {
  return namedIn(code).map((named) => named.specifier);
}

/** What `importsOf` reads, each specifier marked as a worker entry or an import. */
function namedIn(code: string): Named[] {
  const tokens = tokensOf(code);
  const found: Named[] = [];
  const imported = (specifier: string) => found.push({ specifier, isWorkerEntry: false });
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i] as Token;
    if (token.kind !== "name") continue;
    const previous = tokens[i - 1];
    // `a.import`, `a?.import` and `{ import: … }` are no imports.
    if (isPunct(previous, ".")) continue;
    const next = tokens[i + 1];
    if (token.text === "import") {
      if (isPunct(next, "(")) {
        const specifier = literalOf(tokens[i + 2]);
        if (specifier !== undefined) imported(specifier);
      } else if (isPunct(next, ".")) {
        const call = tokens
          .slice(i + 1, i + 6)
          .map((t) => t.text)
          .join("");
        const specifier = literalOf(tokens[i + 6]);
        if (call === ".meta.resolve(" && specifier !== undefined) imported(specifier);
      } else if (literalOf(next) !== undefined && next?.kind === "string") {
        imported(next.value as string);
      } else {
        const specifier = clauseSpecifier(tokens, i + 1);
        if (specifier !== undefined) imported(specifier);
      }
    } else if (token.text === "export") {
      const specifier = clauseSpecifier(tokens, i + 1);
      if (specifier !== undefined) imported(specifier);
    } else if (token.text === "new" && isName(next, "URL") && isPunct(tokens[i + 2], "(")) {
      for (const specifier of urlSpecifiers(tokens, i + 2)) found.push({ specifier, isWorkerEntry: true });
    }
  }
  return found;
}

/**
 * Every way a file outside `folder` reaches a module inside it, as `file → target`, except
 * naming one of `entries` as a worker entry (`new URL("./folder/entry.ts", import.meta.url)`):
 * what runs inside a worker imports the rest, never the reverse.
 */
export function reachesInto(
  folder: string,
  entries: readonly string[],
  files: readonly string[],
  read: (file: string) => string,
): string[] {
  const isInside = (file: string) => file.startsWith(`${folder}/`);
  const found: string[] = [];
  for (const file of files.filter((f) => !isInside(f))) {
    for (const { specifier, isWorkerEntry } of namedIn(read(file))) {
      if (!specifier.startsWith(".")) continue;
      const target = path.normalize(path.join(path.dirname(file), specifier));
      if (!isInside(target) || (isWorkerEntry && entries.includes(target))) continue;
      found.push(`${file} → ${target}`);
    }
  }
  return found;
}

/** Every `.ts`/`.js` file under `dir` (or `dir` itself if it is a file), relative to `root`. */
export function filesOf(root: string, dir: string): string[] {
  const full = path.join(root, dir);
  if (statSync(full).isFile()) return [dir];
  return readdirSync(full, { recursive: true, encoding: "utf8" })
    .filter((name) => /\.(ts|js|mts)$/.test(name))
    .map((name) => path.join(dir, name));
}

export interface Graph {
  /** file → the project files it imports */
  readonly edges: ReadonlyMap<string, readonly string[]>;
  /** file → bare specifiers it imports */
  readonly packages: ReadonlyMap<string, readonly string[]>;
  /** file → specifiers naming the project's own package (`context-host`, `context-host/store`), when `graphOf` was given it */
  readonly selfImports: ReadonlyMap<string, readonly string[]>;
}

/** The project's own package: its name, and the source file each entry specifier resolves to. */
export interface OwnPackage {
  readonly name: string;
  /** `context-host/store` → `core/store.ts` (relative to the root). */
  readonly entries: ReadonlyMap<string, string>;
}

/**
 * The package at `root`: `name`, and each `exports` entry's file (the `context-host-source`
 * condition, the one that names the TypeScript source; a plain string target as it is).
 */
export function ownPackageOf(root: string, read = (file: string) => readFileSync(path.join(root, file), "utf8")): OwnPackage {
  const manifest = JSON.parse(read("package.json")) as { name: string; exports?: Record<string, unknown> };
  const entries = new Map<string, string>();
  for (const [subpath, target] of Object.entries(manifest.exports ?? {})) {
    const file = typeof target === "string" ? target : (target as Record<string, unknown> | null)?.["context-host-source"];
    if (typeof file === "string") entries.set(`${manifest.name}${subpath.slice(1)}`, path.normalize(file));
  }
  return { name: manifest.name, entries };
}

/**
 * The import graph of `files`. With `own`, an import of the project's own package by name
 * is kept apart (`selfImports`) and resolved to its entry file as an edge, so layers and
 * cycles are checked through it too; without, it is a package like any other.
 */
export function graphOf(
  root: string,
  files: readonly string[],
  read = (file: string) => readFileSync(path.join(root, file), "utf8"),
  own?: OwnPackage,
): Graph {
  const edges = new Map<string, string[]>();
  const packages = new Map<string, string[]>();
  const selfImports = new Map<string, string[]>();
  const isOwn = (s: string) => own !== undefined && (s === own.name || s.startsWith(`${own.name}/`));
  for (const file of files) {
    const specs = importsOf(read(file));
    const ownSpecs = specs.filter(isOwn);
    edges.set(file, [
      ...specs.filter((s) => s.startsWith(".")).map((s) => path.normalize(path.join(path.dirname(file), s))),
      ...ownSpecs.flatMap((s) => own?.entries.get(s) ?? []),
    ]);
    packages.set(
      file,
      specs.filter((s) => !s.startsWith(".") && !isOwn(s)),
    );
    selfImports.set(file, ownSpecs);
  }
  return { edges, packages, selfImports };
}

export function layerOf(file: string, table: readonly Layer[] = layers): Layer | undefined {
  return table.find((layer) => layer.paths.some((p) => file === p || file.startsWith(`${p}/`)));
}

/** Every import that breaks a layer rule, as `file → target: why`. */
export function violations(graph: Graph, table: readonly Layer[] = layers): string[] {
  const found: string[] = [];
  for (const [file, targets] of graph.edges) {
    const from = layerOf(file, table);
    if (from === undefined) continue;
    for (const target of targets) {
      const to = layerOf(target, table);
      if (to === undefined) found.push(`${file} → ${target}: not in any layer`);
      else if (to !== from && !from.imports.includes(to.name))
        found.push(`${file} → ${target}: layer ${from.name} may not import ${to.name}`);
    }
    const allowed = from.packages;
    for (const spec of graph.packages.get(file) ?? []) {
      if (allowed !== "*" && !allowed.includes(spec)) found.push(`${file} → ${spec}: layer ${from.name} may not import ${spec}`);
    }
    // By its package name a file would get the package's entry (the compiled copy, outside
    // the source tree): the project's own files import each other by path.
    for (const spec of graph.selfImports.get(file) ?? []) {
      found.push(`${file} → ${spec}: a project file imports its own package by name; import the file by a relative path`);
    }
  }
  return found;
}

/** Import cycles among files, each as the list of files around it. */
export function cycles(graph: Graph): string[][] {
  const found: string[][] = [];
  const state = new Map<string, "open" | "done">();
  const stack: string[] = [];
  const visit = (file: string) => {
    state.set(file, "open");
    stack.push(file);
    for (const target of graph.edges.get(file) ?? []) {
      if (state.get(target) === "open") found.push([...stack.slice(stack.indexOf(target)), target]);
      else if (state.get(target) === undefined && graph.edges.has(target)) visit(target);
    }
    stack.pop();
    state.set(file, "done");
  };
  for (const file of [...graph.edges.keys()].sort()) if (state.get(file) === undefined) visit(file);
  return found;
}

/** Punctuation that, right before a `=`, makes it a compound assignment (`+=`, `??=`, `>>>=`, …). */
const compoundOperators = new Set(["+", "-", "*", "/", "%", "&", "|", "^", "?"]);

/**
 * The index of the last token of the target the `=` at `at` writes (past a compound
 * operator's `+`, `??`, `>>>`, …): undefined when it is no assignment (`==`, `=>`, `<=`, `>=`).
 */
function targetEnd(tokens: readonly Token[], at: number): number | undefined {
  const next = tokens[at + 1];
  if (isPunct(next, "=") || isPunct(next, ">")) return undefined;
  let end = at - 1;
  const previous = tokens[end];
  if (isPunct(previous, "=") || isPunct(previous, "!")) return undefined;
  // `<=` and `>=` compare; `<<=`, `>>=` and `>>>=` assign.
  if (isPunct(previous, "<") || isPunct(previous, ">")) {
    const shift = previous?.text as string;
    if (!isPunct(tokens[end - 1], shift)) return undefined;
    while (isPunct(tokens[end], shift)) end--;
    return end;
  }
  while (tokens[end]?.kind === "punct" && compoundOperators.has(tokens[end]?.text as string)) end--;
  return end;
}

/** The index of the bracket matching the one at `at` (`(`/`[` forward, `)`/`]` backward), or -1. */
function matching(tokens: readonly Token[], at: number): number {
  const pairs: Record<string, [string, 1 | -1]> = { "(": [")", 1], "[": ["]", 1], ")": ["(", -1], "]": ["[", -1] };
  const own = tokens[at]?.text as string;
  const [other, step] = pairs[own] ?? ["", 1];
  let depth = 0;
  for (let j = at; j >= 0 && j < tokens.length; j += step) {
    const text = tokens[j]?.kind === "punct" ? tokens[j]?.text : undefined;
    if (text === own) depth++;
    else if (text === other && --depth === 0) return j;
  }
  return -1;
}

/** A bracketed group's text as one segment: `[key]`, `(call)`. */
function groupText(tokens: readonly Token[], open: number, close: number): string {
  return tokens
    .slice(open, close + 1)
    .map((t) => t.text)
    .join("");
}

/**
 * The segments of the member chain ending at `end` (`a.b[c]` → `a`, `b`, `[c]`), first to
 * last; none when no chain ends there (a destructuring pattern, an array type `T[]`).
 */
function chainEndingAt(tokens: readonly Token[], end: number): string[] {
  const segments: string[] = [];
  let j = end;
  while (j >= 0) {
    const token = tokens[j] as Token;
    if (isPunct(token, "!")) {
      j--;
    } else if (isPunct(token, "]") || isPunct(token, ")")) {
      const open = matching(tokens, j);
      // `T[]`: an array type, never a member written to.
      if (open < 0 || (isPunct(token, "]") && open === j - 1)) return [];
      segments.unshift(groupText(tokens, open, j));
      j = open - 1;
      if (isPunct(tokens[j], ".") && isPunct(tokens[j - 1], "?")) j -= 2;
    } else if (token.kind === "name") {
      // `const [a, b] = …` declares names; it writes no member.
      if (declarations.has(token.text)) return [];
      segments.unshift(token.text);
      j--;
      if (!isPunct(tokens[j], ".")) break;
      j -= isPunct(tokens[j - 1], "?") ? 2 : 1;
    } else break;
  }
  return isTypeAnnotation(tokens, j) ? [] : segments;
}

const declarations = new Set(["const", "let", "var"]);

/** Whether a chain after the token at `before` is a type (`x: ns.Type = …`): after a `:` that ends no `case` or `default` label. */
function isTypeAnnotation(tokens: readonly Token[], before: number): boolean {
  if (!isPunct(tokens[before], ":")) return false;
  for (let j = before - 1; j >= 0; j--) {
    const token = tokens[j] as Token;
    if (isName(token, "case") || isName(token, "default")) return false;
    if (isPunct(token, ";") || isPunct(token, "{") || isPunct(token, "}")) return true;
  }
  return true;
}

/** The segments of the member chain starting at `start` (`++a.b[c]`'s target). */
function chainStartingAt(tokens: readonly Token[], start: number): string[] {
  const first = tokens[start];
  if (first?.kind !== "name") return [];
  const segments = [first.text];
  let j = start + 1;
  for (;;) {
    const token = tokens[j];
    if (isPunct(token, "!")) {
      j++;
    } else if (isPunct(token, ".") && tokens[j + 1]?.kind === "name") {
      segments.push(tokens[j + 1]?.text as string);
      j += 2;
    } else if (isPunct(token, "[") || isPunct(token, "(")) {
      const close = matching(tokens, j);
      if (close < 0) return segments;
      segments.push(groupText(tokens, j, close));
      j = close + 1;
    } else return segments;
  }
}

/** The target's segments of the assignment whose operator is at `at`; none if there is none. */
function targetAt(tokens: readonly Token[], at: number): string[] {
  const token = tokens[at] as Token;
  if (isPunct(token, "=")) {
    const end = targetEnd(tokens, at);
    return end === undefined ? [] : chainEndingAt(tokens, end);
  }
  // `++`/`--`: after its target, or before it.
  const after = chainEndingAt(tokens, at - 1);
  return after.length > 0 ? after : chainStartingAt(tokens, at + 2);
}

/**
 * The writes to another object's fields in `code`: assignments (plain, compound, `++`/`--`)
 * whose target has `least` segments or more (three: `entry.hosted.active = …`) and does not
 * start at `this`. Each is the target's text. Text in comments, strings and templates is
 * never taken for code.
 */
export function farWritesOf(code: string, least = 3): string[] {
  const tokens = tokensOf(code);
  const found: string[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i] as Token;
    const isStep = (isPunct(token, "+") || isPunct(token, "-")) && isPunct(tokens[i + 1], token.text);
    if (!isPunct(token, "=") && !isStep) continue;
    const segments = targetAt(tokens, i);
    if (isStep) i++;
    if (segments.length >= least && segments[0] !== "this") found.push(segments.join(".").replace(/\.(?=[[(])/g, ""));
  }
  return found;
}
