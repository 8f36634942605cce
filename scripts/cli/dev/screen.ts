// Owns how `dev` writes to the terminal: sections set apart from the conversation,
// colours only on a terminal and never with NO_COLOR, and lines that arrive while the
// prompt waits (a reload, a diagnostic) printed above it without losing what is typed.

import type { Interface } from "node:readline";
import { escapeControl } from "../../../core/index.ts";

export type Tone = "baseline" | "update" | "summary" | "reply" | "reload" | "problem" | "note" | "frame";

const ansi: Readonly<Record<Tone, string>> = {
  baseline: "36", // cyan
  update: "33", // yellow
  summary: "35", // magenta
  reply: "0",
  reload: "32", // green
  problem: "31", // red
  note: "2", // dim
  frame: "2",
};

/** Whether to colour: a terminal, `NO_COLOR` unset or empty, `TERM` not `dumb`. */
export function wantsColor(isTTY: boolean, env: NodeJS.ProcessEnv): boolean {
  if (!isTTY) return false;
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== "") return false;
  return env.TERM !== "dumb";
}

/** Text from plugins, files or a model, made safe line by line (control characters escaped, line breaks kept). */
export function safeLines(text: string): string[] {
  return text.split(/\r?\n/).map(escapeControl);
}

export class Screen {
  readonly #write: (text: string) => void;
  readonly #isTTY: boolean;
  readonly #color: boolean;
  #prompt: Interface | undefined;
  #isPromptShown = false;
  /** A streamed reply is being written: the cursor is mid-line. */
  #isMidLine = false;

  constructor(options: { readonly write: (text: string) => void; readonly isTTY: boolean; readonly color: boolean }) {
    this.#write = options.write;
    this.#isTTY = options.isTTY;
    this.#color = options.color;
  }

  get isTTY(): boolean {
    return this.#isTTY;
  }

  /** The readline interface whose prompt lines are printed above. */
  attach(prompt: Interface): void {
    this.#prompt = prompt;
  }

  /** Shows the prompt (on a terminal) and remembers that it waits. */
  showPrompt(): void {
    if (this.#prompt === undefined) return;
    this.#isPromptShown = true;
    if (this.#isTTY) this.#prompt.prompt(true);
  }

  /** The prompt was answered: output now goes below it until it is shown again. */
  promptAnswered(): void {
    this.#isPromptShown = false;
  }

  paint(tone: Tone, text: string): string {
    return this.#color && tone !== "reply" ? `\u001b[${ansi[tone]}m${text}\u001b[0m` : text;
  }

  /**
   * Writes a piece of a line as it arrives (a streamed reply; already safe): a line printed
   * meanwhile (a reload) starts on a line of its own, and `endLine` ends it.
   */
  partial(text: string): void {
    if (text === "") return;
    this.#write(text);
    this.#isMidLine = !text.endsWith("\n");
  }

  /** Ends a line `partial` left open. */
  endLine(): void {
    if (!this.#isMidLine) return;
    this.#write("\n");
    this.#isMidLine = false;
  }

  /** Prints lines (already safe); above the waiting prompt when there is one. */
  lines(lines: readonly string[]): void {
    this.endLine();
    const text = `${lines.join("\n")}\n`;
    if (this.#isPromptShown && this.#isTTY && this.#prompt !== undefined) {
      // Clear the prompt line, print, and draw the prompt again with what was typed so far.
      this.#write("\r\u001b[2K");
      this.#write(text);
      this.#prompt.prompt(true);
      return;
    }
    this.#write(text);
  }

  /** One line in a tone. */
  line(tone: Tone, text: string): void {
    this.lines([this.paint(tone, text)]);
  }

  /** A framed section set apart from the conversation: a titled rule, the text indented by a bar, a closing rule. */
  section(tone: Tone, title: string, text: string): void {
    const bar = this.paint("frame", "│");
    this.lines([
      this.paint(tone, `┌─ ${title} ${"─".repeat(Math.max(3, 56 - title.length))}`),
      ...safeLines(text).map((line) => `${bar} ${line}`),
      this.paint(tone, `└${"─".repeat(60)}`),
    ]);
  }
}
