// Owns how every command reads its command line: one parser, on `node:util` `parseArgs`, the
// options several commands share declared once (so `--location` means and checks the same in
// each), and each command's own options declared beside them. Every mistake is a usage error
// naming the argument as the user wrote it, and the command.

import { existsSync, statSync } from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import { type CommandName, pluginEntry, UsageInvalid } from "./usage.ts";

/** Where a value is read: the command, its working folder, and the option as the user wrote it (`--config`, not `--settings`). */
export interface ReadContext {
  readonly command: CommandName;
  readonly cwd: string;
  readonly written: string;
}

/** Reads one value of an option: checks it and returns it as the command uses it, or throws a usage error naming it. */
export type ValueReader<Value> = (text: string, at: ReadContext) => Value;

/** Other spellings of an option (`--config` for `--settings`). */
interface Spellings {
  readonly aliases?: readonly string[];
}

/** An option without a value: `--json`. */
export interface FlagOption extends Spellings {
  readonly kind: "flag";
}

/** An option with one value; the last one given wins: `--location DIR`. */
export interface ValueOption<Value> extends Spellings {
  readonly kind: "value";
  /** What the value is, as the error says when it is missing: `--location needs a folder`. */
  readonly needs: string;
  readonly read: ValueReader<Value>;
}

/** An option given any number of times, each value kept in order: `--plugins DIR`…. */
export interface ListOption<Value> extends Spellings {
  readonly kind: "list";
  readonly needs: string;
  readonly read: ValueReader<Value>;
}

/** An option whose value is optional and given only after `=`: `--inspect[=PORT]`. */
export interface InlineOption<Value> extends Spellings {
  readonly kind: "inline";
  readonly read: (text: string | undefined, at: ReadContext) => Value;
}

export type OptionRule = FlagOption | ValueOption<unknown> | ListOption<unknown> | InlineOption<unknown>;

/** A command's options by name (the name is the long option without its dashes). */
export type OptionTable = Readonly<Record<string, OptionRule>>;

/** What parsing gives for each option of a table: a flag's presence, a value (or none), a list's values. */
export type OptionValues<Table extends OptionTable> = {
  readonly [Name in keyof Table]: Table[Name] extends FlagOption
    ? boolean
    : Table[Name] extends ListOption<infer Value>
      ? readonly Value[]
      : Table[Name] extends ValueOption<infer Value>
        ? Value | undefined
        : Table[Name] extends InlineOption<infer Value>
          ? Value | undefined
          : never;
};

/** Declares an option without a value. */
export function flagOption(): FlagOption {
  return { kind: "flag" };
}

/** Declares an option with one value, what it `needs` when it is missing, how to `read` it, and its other spellings. */
export function valueOption<Value>(needs: string, read: ValueReader<Value>, aliases: readonly string[] = []): ValueOption<Value> {
  return { kind: "value", needs, read, aliases };
}

/** Declares a repeatable option. */
export function listOption<Value>(needs: string, read: ValueReader<Value>): ListOption<Value> {
  return { kind: "list", needs, read };
}

/** Declares an option whose value is optional and given only after `=`. */
export function inlineOption<Value>(read: (text: string | undefined, at: ReadContext) => Value): InlineOption<Value> {
  return { kind: "inline", read };
}

/** A usage error about one value: `--location x: no such folder (/abs/x)`. */
export function invalidValue(text: string, at: ReadContext, reason: string): UsageInvalid {
  return new UsageInvalid({ command: at.command, reason: `${at.written} ${text}: ${reason}` });
}

/** The value as given. */
export function keepText(text: string): string {
  return text;
}

/** The value as a path, made absolute against the working folder. */
export function resolvedPath(text: string, at: ReadContext): string {
  return path.resolve(at.cwd, text);
}

/** A folder that exists, made absolute. */
export function existingFolder(text: string, at: ReadContext): string {
  const folder = path.resolve(at.cwd, text);
  if (!existsSync(folder) || !statSync(folder).isDirectory()) throw invalidValue(text, at, `no such folder (${folder})`);
  return folder;
}

/** A port given on the command line (0 to 65535), or a usage error naming it as `shown` (`--port x`, `--inspect=x`). */
export function portValue(text: string, shown: string, command: CommandName): number {
  const port = Number(text);
  if (!/^\d+$/.test(text) || port > 65535)
    throw new UsageInvalid({ command, reason: `${shown}: a port is a number from 0 to 65535` });
  return port;
}

/** An http or https URL. */
export function httpUrl(text: string, at: ReadContext): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw invalidValue(text, at, "not a URL");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw invalidValue(text, at, "not an http(s) URL");
  return text;
}

function portNumber(text: string, at: ReadContext): number {
  return portValue(text, `${at.written} ${text}`, at.command);
}

/** `--inspect` (any free port) or `--inspect=PORT`. */
function inspectorPort(text: string | undefined, at: ReadContext): { readonly port?: number } {
  if (text === undefined) return {};
  return { port: portValue(text, `${at.written}=${text}`, at.command) };
}

function pluginEntryValue(text: string, at: ReadContext): string {
  return pluginEntry(text, at.cwd, at.command);
}

/**
 * The options that mean the same in every command that takes them, declared once: a command
 * names the ones it takes, and may not declare another option under one of their spellings.
 */
export const sharedOptions = {
  /** A folder of plugins, a plugin file or an installed plugin package's name; repeatable. */
  plugins: listOption("a folder, a plugin file or a package name", pluginEntryValue),
  /** The settings file (read by `loadSettings`); `--config` is the same. */
  settings: valueOption("a file", keepText, ["config"]),
  /** The session location: a folder that exists. */
  location: valueOption("a folder", existingFolder),
  /** Where sessions are kept; `--data-dir` is the same. */
  data: valueOption("a folder", resolvedPath, ["data-dir"]),
  json: flagOption(),
  model: valueOption("a model name", keepText),
  port: valueOption("a port", portNumber),
  /** Also serve the browser inspector, on PORT or any free one. */
  inspect: inlineOption(inspectorPort),
} as const;

export type SharedOptions = typeof sharedOptions;
export type SharedOptionName = keyof SharedOptions;

/** What a command reads from its command line: the shared options it takes, its own, and its operands. */
export interface CommandLine<Shared extends SharedOptionName, Own extends OptionTable> {
  readonly command: CommandName;
  readonly shared: readonly Shared[];
  readonly own: Own;
  /** How the command reads a word that is not an option (`check`'s PLUGIN); absent: it takes none. */
  readonly readOperand?: ValueReader<string>;
}

/** A command line, read: each option's value, and the operands in order. */
export interface ParsedCommandLine<Table extends OptionTable> {
  readonly options: OptionValues<Table>;
  readonly operands: readonly string[];
}

/** An option as `parseArgs` reports it with `tokens: true`. */
interface OptionToken {
  readonly index: number;
  readonly name: string;
  /** As written, dashes included: `--config`, `-x`. */
  readonly rawName: string;
  readonly value: string | undefined;
  /** Whether the value came after `=` rather than as the next argument. */
  readonly inlineValue: boolean | undefined;
}

/**
 * Parses a command's arguments (those after the command's name) by its declaration. Each
 * value is read as it is met, left to right, so the first mistake is the one reported.
 */
export function parseCommandLine<Shared extends SharedOptionName, Own extends OptionTable>(
  args: readonly string[],
  cwd: string,
  line: CommandLine<Shared, Own>,
): ParsedCommandLine<Pick<SharedOptions, Shared> & Own> {
  const table = optionTableOf(line);
  const names = namesBySpelling(table);
  const { tokens } = parseArgs({
    args: [...args],
    options: parseArgsOptions(table),
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  const values = emptyValues(table);
  const operands: string[] = [];
  for (const token of tokens) {
    if (token.kind === "positional") operands.push(readOperand(token.value, cwd, line));
    else if (token.kind === "option") {
      const read = readOption(token, args, { cwd, command: line.command, table, names });
      if (read.isListItem) (values[read.name] as unknown[]).push(read.value);
      else values[read.name] = read.value;
    }
  }
  return { options: values as OptionValues<Pick<SharedOptions, Shared> & Own>, operands };
}

/** The command's table: the shared options it names, then its own, none of which may reuse a shared spelling. */
function optionTableOf(line: CommandLine<SharedOptionName, OptionTable>): OptionTable {
  const shared = namesBySpelling(sharedOptions);
  for (const [name, rule] of Object.entries(line.own)) {
    const taken = spellingsOf(name, rule).find((spelling) => shared.has(spelling));
    if (taken !== undefined) throw new Error(`${line.command}: --${taken} is a shared option; take it from sharedOptions`);
  }
  const table: Record<string, OptionRule> = {};
  for (const name of line.shared) table[name] = sharedOptions[name];
  return { ...table, ...line.own };
}

function spellingsOf(name: string, rule: OptionRule): readonly string[] {
  return [name, ...(rule.aliases ?? [])];
}

/** Each spelling of each option (`config`), to its option's name (`settings`). */
function namesBySpelling(table: OptionTable): ReadonlyMap<string, string> {
  const names = new Map<string, string>();
  for (const [name, rule] of Object.entries(table)) {
    for (const spelling of spellingsOf(name, rule)) names.set(spelling, name);
  }
  return names;
}

/**
 * The table as `parseArgs` takes it: an option with a value is a string (it takes the next
 * argument), the others booleans (a value only after `=`, which `readOption` judges).
 */
function parseArgsOptions(table: OptionTable): Record<string, { type: "string" | "boolean" }> {
  const options: Record<string, { type: "string" | "boolean" }> = {};
  for (const [name, rule] of Object.entries(table)) {
    const type = rule.kind === "value" || rule.kind === "list" ? "string" : "boolean";
    for (const spelling of spellingsOf(name, rule)) options[spelling] = { type };
  }
  return options;
}

function emptyValues(table: OptionTable): Record<string, unknown> {
  const values: Record<string, unknown> = {};
  for (const [name, rule] of Object.entries(table)) {
    if (rule.kind === "flag") values[name] = false;
    else if (rule.kind === "list") values[name] = [];
  }
  return values;
}

interface Reading {
  readonly cwd: string;
  readonly command: CommandName;
  readonly table: OptionTable;
  readonly names: ReadonlyMap<string, string>;
}

/** One option read: its name and value (`isListItem`: one more item of a list option). */
interface ReadOption {
  readonly name: string;
  readonly value: unknown;
  readonly isListItem: boolean;
}

/** Reads one option, or throws a usage error naming it. */
function readOption(token: OptionToken, args: readonly string[], reading: Reading): ReadOption {
  // Only long options are declared: a short one (`-x`) is unknown whatever its letter.
  const name = token.rawName.startsWith("--") ? reading.names.get(token.name) : undefined;
  const rule = name === undefined ? undefined : reading.table[name];
  if (name === undefined || rule === undefined) throw unknownOption(token, args, reading.command);
  const at: ReadContext = { command: reading.command, cwd: reading.cwd, written: token.rawName };
  switch (rule.kind) {
    case "flag":
      if (token.value !== undefined) throw new UsageInvalid({ command: at.command, reason: `${at.written} takes no value` });
      return { name, value: true, isListItem: false };
    case "inline":
      return { name, value: rule.read(token.value, at), isListItem: false };
    case "value":
      return { name, value: rule.read(givenValue(token, rule.needs, at), at), isListItem: false };
    case "list":
      return { name, value: rule.read(givenValue(token, rule.needs, at), at), isListItem: true };
  }
}

/**
 * The value of an option that needs one. `parseArgs` takes the next argument whatever it is;
 * one that is itself an option (`--location --json`) means the value was left out.
 */
function givenValue(token: OptionToken, needs: string, at: ReadContext): string {
  const text = token.value;
  const isMissing = text === undefined || text === "" || (!token.inlineValue && text.startsWith("--"));
  if (isMissing) throw new UsageInvalid({ command: at.command, reason: `${at.written} needs ${needs}` });
  return text;
}

/** An option the command does not take, named as written. */
function unknownOption(token: OptionToken, args: readonly string[], command: CommandName): UsageInvalid {
  const written = args[token.index] ?? token.rawName;
  return new UsageInvalid({ command, reason: `unknown argument ${JSON.stringify(written)}` });
}

function readOperand(text: string, cwd: string, line: CommandLine<SharedOptionName, OptionTable>): string {
  const at: ReadContext = { command: line.command, cwd, written: text };
  if (line.readOperand === undefined)
    throw new UsageInvalid({
      command: line.command,
      reason: `unknown argument ${JSON.stringify(text)} (${line.command} takes only options)`,
    });
  return line.readOperand(text, at);
}
