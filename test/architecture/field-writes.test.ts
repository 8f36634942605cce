// No class assigns another object's fields: code that holds an object states an intent by
// calling its method, never by writing `holder.owned.field = …` (issue 49).

import { readFileSync } from "node:fs";
import path from "node:path";
import { expect } from "chai";
import { fieldWritesOf } from "./field-writes.ts";
import { filesOf } from "./layers.ts";

const root = path.resolve(import.meta.dirname, "../..");

describe("architecture: one owner for each field", () => {
  it("finds a write through another object, in every assignment form", () => {
    const code = [
      "entry.hosted.active = next;",
      "other.hosted.hash = undefined; a.b.c += 1; a.b.c ??= 2; a.b.c ||= x; a.b.c >>>= 1; a.b.c++; --x; a.b.d--;",
    ].join("\n");
    expect(fieldWritesOf(code)).to.deep.equal([
      "entry.hosted.active",
      "other.hosted.hash",
      "a.b.c",
      "a.b.c",
      "a.b.c",
      "a.b.c",
      "a.b.c",
      "a.b.d",
    ]);
  });

  it("leaves reads, comparisons, its own fields, strings and comments alone", () => {
    const code = [
      "if (a.b.c === x || a.b.c == y || a.b.c >= 1 || a.b.c <= 2 || a.b.c !== z) f(a.b.c);",
      "const g = (a) => a.b.c; this.#state.phase = next; this.x = 1; a.b = 2;",
      '// entry.hosted.active = next\nconst s = "x.y.z = 1";',
      `const t = \`$\{"p.q.r = 2"}\`;`,
    ].join("\n");
    expect(fieldWritesOf(code)).to.deep.equal([]);
  });

  it("no file of core/, scripts/cli, plugins/ or examples/ writes another object's fields", () => {
    const files = ["core", "scripts/cli", "plugins", "examples"].flatMap((dir) => filesOf(root, dir));
    const found = files.flatMap((file) =>
      fieldWritesOf(readFileSync(path.join(root, file), "utf8")).map((write) => `${file}: ${write}`),
    );
    expect(found).to.deep.equal([]);
  });
});
