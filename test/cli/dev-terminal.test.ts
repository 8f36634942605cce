// `context-host dev` as a person uses it: the real program in a real pseudo-terminal
// (tmux), driven with keystrokes, read from the screen. tmux comes from Debian; `.ci/run`
// installs it when missing.

import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { expect } from "chai";
import { programArgs } from "../support/compiled.ts";

// A server of our own, so the test never touches anyone's tmux sessions.
const socket = `context-host-test-${process.pid}`;

const tmux = (...args: string[]) => execFileSync("tmux", ["-L", socket, ...args], { encoding: "utf8" });
const shellQuote = (text: string) => `'${text.replaceAll("'", `'\\''`)}'`;

/** Starts the program in a 120×40 terminal; its exit code lands in `<dir>/exit-<name>`. */
function startTerminal(name: string, dir: string, args: string[]) {
  const command = [process.execPath, ...programArgs("scripts/cli/context-host.ts"), "dev", ...args].map(shellQuote).join(" ");
  const exitFile = path.join(dir, `exit-${name}`);
  tmux(
    "new-session",
    "-d",
    "-s",
    name,
    "-x",
    "120",
    "-y",
    "40",
    "-c",
    dir,
    `${command}; echo $? > ${shellQuote(exitFile)}; sleep 60`,
  );
  const screen = () => tmux("capture-pane", "-p", "-J", "-S", "-200", "-t", name);
  return {
    screen,
    keys: (...keys: string[]) => tmux("send-keys", "-t", name, ...keys),
    /** Polls the screen until `needle` appears after `from` occurrences of it. */
    async until(needle: string | RegExp, timeoutMs = 4000, occurrence = 1): Promise<string> {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const text = screen();
        const found =
          typeof needle === "string" ? text.split(needle).length - 1 : (text.match(new RegExp(needle, "g")) ?? []).length;
        if (found >= occurrence) return text;
        if (Date.now() > deadline) throw new Error(`no ${String(needle)} on the screen of ${name}:\n${text}`);
        await new Promise((resolve) => setTimeout(resolve, 40));
      }
    },
    async exitCode(timeoutMs = 4000): Promise<number> {
      const deadline = Date.now() + timeoutMs;
      while (!existsSync(exitFile) || readFileSync(exitFile, "utf8").trim() === "") {
        if (Date.now() > deadline) throw new Error(`${name} did not exit:\n${screen()}`);
        await new Promise((resolve) => setTimeout(resolve, 40));
      }
      return Number(readFileSync(exitFile, "utf8").trim());
    },
  };
}

const notePlugin = (text: string) => `import { definePlugin } from "context-host/plugin";
import Type from "typebox";
export default definePlugin({ name: "note", setup(api) {
  api.source({ key: "note/text", schema: Type.String(), load: () => ${JSON.stringify(text)},
    baseline: (v) => "Note: " + v, update: (_p, v) => "Note is now: " + v });
} });`;

describe("context-host dev in a terminal (tmux)", function () {
  // Two programs start at once; each takes a second or more to load on a busy machine.
  this.timeout(40_000);
  let dir: string;
  before(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "dev-tty-"));
    writeFileSync(path.join(dir, "note.ts"), notePlugin("one"));
  });
  after(() => {
    try {
      tmux("kill-server");
    } catch {
      // already gone
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it("shows a prompt and the echo, the Baseline, reloads and the Mid-Conversation System Message; /context, /problems, /quit; Ctrl-C exits 130", async () => {
    const data = ["--data", path.join(dir, ".data")];
    const session = startTerminal("dev", dir, ["--plugins", dir, ...data]);
    const interrupted = startTerminal("interrupted", dir, ["--plugins", dir, ...data]);
    await session.until("you> ", 25_000);
    await interrupted.until("you> ", 25_000);

    session.keys("-l", "what is the note?");
    expect(await session.until("you> what is the note?")).to.contain("you> what is the note?"); // typed text is echoed
    session.keys("Enter");
    let screen = await session.until("assistant: reply 1: what is the note?");
    expect(screen).to.contain("Baseline System Context · epoch 1 (initial)");
    expect(screen).to.contain("│ Note: one");
    expect(screen.indexOf("Baseline System Context")).to.be.below(screen.indexOf("assistant: reply 1"));

    // Saved as an editor saves (a new file renamed over the old): a write in place can be
    // seen half done, an empty module that fails to load once and takes a generation.
    writeFileSync(path.join(dir, "note.next"), notePlugin("two"));
    renameSync(path.join(dir, "note.next"), path.join(dir, "note.ts"));
    screen = await session.until(/note generation 2 active in \d+ ms/);

    session.keys("-l", "/context");
    session.keys("Enter");
    screen = await session.until("Would be admitted at the next boundary (not admitted)");
    expect(screen).to.contain('note/text = "one"');

    session.keys("-l", "and now?");
    session.keys("Enter");
    screen = await session.until("assistant: reply 2: and now?");
    const second = screen.slice(screen.lastIndexOf("you> and now?"));
    expect(second).to.contain("Mid-Conversation System Message");
    expect(second).to.contain("│ Note is now: two");
    expect(second).not.to.contain("Baseline System Context");

    session.keys("-l", "/problems");
    session.keys("Enter");
    await session.until("no current problems");
    session.keys("-l", "/quit");
    session.keys("Enter");
    expect(await session.exitCode()).to.equal(0);

    interrupted.keys("C-c");
    expect(await interrupted.exitCode()).to.equal(130);
  });
});
