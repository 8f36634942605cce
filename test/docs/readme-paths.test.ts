// The README names only files that are there: a path it shows in backticks (a folder and a
// file, `examples/plugins/weather.ts`) is a file of this repository, so a reader who opens
// it finds it. A file the reader writes is named without a folder (`weather.ts`).

import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { expect } from "chai";

const root = path.resolve(import.meta.dirname, "../..");

describe("the README's file names", () => {
  it("every path it names in backticks is a file or folder of the repository", () => {
    const readme = readFileSync(path.join(root, "README.md"), "utf8");
    const named = [...readme.matchAll(/`([A-Za-z0-9_.-]+(?:\/[A-Za-z0-9_.-]+)*\/[A-Za-z0-9_-]+\.[a-z]{2,4})`/g)].map(
      (match) => match[1] as string,
    );
    expect(named, "the README names files").to.include("examples/plugins/weather.ts");
    expect(named.filter((file) => !existsSync(path.join(root, file)))).to.deep.equal([]);
  });
});
