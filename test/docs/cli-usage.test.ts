// docs/cli.md says what `context-host help COMMAND` says: each command's synopsis as the
// usage prints it, and every option of `dev` and `render` (issue 35).

import { readFileSync } from "node:fs";
import path from "node:path";
import { expect } from "chai";
import { commandUsage } from "../../scripts/cli/usage.ts";

const doc = readFileSync(path.resolve(import.meta.dirname, "../../docs/cli.md"), "utf8").replace(/\s+/g, " ");

/** The synopsis of a command's usage: its first `usage:` form, continuation lines joined. */
function synopsis(usage: string): string {
  const [first = "", ...rest] = usage.split("\n");
  const continued = rest.filter((line) => /^\s{8,}\[/.test(line)).map((line) => line.trim());
  return [first.replace(/^usage: /, ""), ...continued].join(" ");
}

describe("docs/cli.md and the usage the program prints", () => {
  for (const command of ["dev", "render", "inspect", "proxy"] as const) {
    it(`docs/cli.md gives the synopsis of ${command} as \`help ${command}\` prints it`, () => {
      expect(doc).to.contain(`\`${synopsis(commandUsage[command])}\``);
    });
  }

  for (const command of ["dev", "render", "proxy"] as const) {
    it(`docs/cli.md names every option \`help ${command}\` lists`, () => {
      const options = [...new Set(commandUsage[command].match(/^ {2}--[a-z-]+/gm)?.map((o) => o.trim()))];
      expect(options.length).to.be.at.least(4);
      expect(options.filter((option) => !doc.includes(option))).to.deep.equal([]);
    });
  }
});
