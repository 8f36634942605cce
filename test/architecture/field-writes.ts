// Finds where code assigns a field of an object it reaches through another: `a.b.c = …`
// (or `+=`, `??=`, `++`, …) where `a` is not `this`. Each object owns its fields; another
// object states an intent by calling a method, so such a write is an owner being bypassed.

import { type Token, tokensOf } from "./layers.ts";

/** Compound assignment operators, without their `=`. */
const compound = new Set(["+", "-", "*", "/", "%", "**", "&", "|", "^", "&&", "||", "??", "<<", ">>", ">>>"]);
const operatorChars = new Set(["+", "-", "*", "/", "%", "&", "|", "^", "?", "<", ">"]);

const isPunct = (token: Token | undefined, text: string) => token?.kind === "punct" && token.text === text;

/** The member chain starting at `start` (`a.b.c`), and the index after it; none when no chain starts there. */
function chainAt(tokens: readonly Token[], start: number): { names: string[]; end: number } | undefined {
  const first = tokens[start];
  if (first?.kind !== "name" || isPunct(tokens[start - 1], ".")) return undefined;
  const names = [first.text];
  let i = start + 1;
  while (isPunct(tokens[i], ".") && tokens[i + 1]?.kind === "name") {
    names.push((tokens[i + 1] as Token).text);
    i += 2;
  }
  return { names, end: i };
}

/** Whether the tokens at `i` assign what stands before them: `=`, a compound `op=`, `++` or `--`. */
function assignsAt(tokens: readonly Token[], i: number): boolean {
  if (isPunct(tokens[i], "=")) return !isPunct(tokens[i + 1], "=") && !isPunct(tokens[i + 1], ">");
  if ((isPunct(tokens[i], "+") && isPunct(tokens[i + 1], "+")) || (isPunct(tokens[i], "-") && isPunct(tokens[i + 1], "-"))) {
    return true;
  }
  let operator = "";
  let j = i;
  while (tokens[j]?.kind === "punct" && operatorChars.has((tokens[j] as Token).text)) {
    operator += (tokens[j] as Token).text;
    j++;
  }
  return compound.has(operator) && isPunct(tokens[j], "=") && !isPunct(tokens[j + 1], "=");
}

/** Each `a.b.c` (three names or more, `a` not `this`) that the code assigns to. */
export function fieldWritesOf(code: string): string[] {
  const tokens = tokensOf(code);
  const writes: string[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const chain = chainAt(tokens, i);
    if (chain === undefined) continue;
    if (chain.names.length >= 3 && chain.names[0] !== "this" && assignsAt(tokens, chain.end)) {
      writes.push(chain.names.join("."));
    }
    i = chain.end - 1;
  }
  return writes;
}
