// How `dev` writes: colour only on a terminal without NO_COLOR, plugin text escaped,
// and a line that arrives while the prompt waits is printed above it.

import { EventEmitter } from "node:events";
import type { Interface } from "node:readline";
import { expect } from "chai";
import { Screen, safeLines, wantsColor } from "../../scripts/cli/dev/screen.ts";

describe("dev screen", () => {
  it("colours only a terminal, and never with NO_COLOR set or TERM=dumb", () => {
    expect(wantsColor(true, {})).to.equal(true);
    expect(wantsColor(false, {})).to.equal(false);
    expect(wantsColor(true, { NO_COLOR: "1" })).to.equal(false);
    expect(wantsColor(true, { NO_COLOR: "" }), "an empty NO_COLOR does not count").to.equal(true);
    expect(wantsColor(true, { TERM: "dumb" })).to.equal(false);
  });

  it("frames a section; without colour it has no escape sequences, with colour it has", () => {
    for (const color of [false, true]) {
      let written = "";
      const screen = new Screen({ write: (text) => (written += text), isTTY: color, color });
      screen.section("update", "Mid-Conversation System Message", "one\ntwo \u001b[2J");
      const lines = written.split("\n");
      expect(lines[0]).to.contain("┌─ Mid-Conversation System Message");
      const plain = (line: string) => line.replaceAll("\u001b[2m", "").replaceAll("\u001b[0m", "");
      expect(lines.slice(1, 3).map(plain)).to.deep.equal(["│ one", "│ two \\u{1b}[2J"]);
      expect(written.includes("\u001b[")).to.equal(color);
      expect(written).not.to.contain("\u001b[2J");
    }
  });

  it("escapes control characters line by line, keeping the line breaks", () => {
    expect(safeLines("a\r\nb\u0007\nc")).to.deep.equal(["a", "b\\u{7}", "c"]);
  });

  it("on a terminal, a line that arrives while the prompt waits clears the prompt line and redraws the prompt", () => {
    let written = "";
    const redraws: boolean[] = [];
    const prompt = Object.assign(new EventEmitter(), { prompt: (preserve?: boolean) => redraws.push(preserve === true) });
    const screen = new Screen({ write: (text) => (written += text), isTTY: true, color: false });
    screen.attach(prompt as unknown as Interface);
    screen.showPrompt();
    screen.line("reload", "  weather generation 2 active in 3 ms");
    expect(written).to.equal("\r\u001b[2K  weather generation 2 active in 3 ms\n");
    expect(redraws).to.deep.equal([true, true]);
    screen.promptAnswered();
    written = "";
    screen.line("reply", "assistant: hi");
    expect(written).to.equal("assistant: hi\n");
    expect(redraws).to.have.length(2);
  });
});
