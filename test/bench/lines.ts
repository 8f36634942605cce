// Checks printed bench lines: exactly the six fields in order, and a ratio that is the
// printed value over the printed baseline (to the 4 significant digits it is printed with).

import { expect } from "chai";
import { isBenchLine, lineFields } from "../../scripts/bench/measure.ts";

/** Parses one printed line and checks it is a bench line whose ratio is value / baseline. */
export function checkBenchLine(line: string): Record<string, unknown> {
  expect(isBenchLine(line), line).to.equal(true);
  const parsed = JSON.parse(line) as Record<string, unknown>;
  expect(Object.keys(parsed)).to.deep.equal([...lineFields]);
  const value = parsed.value as number;
  const baseline = parsed.baseline as number;
  expect(baseline, line).to.be.greaterThan(0);
  expect(parsed.ratio as number, line).to.be.closeTo(value / baseline, 5e-4 * Math.abs(value / baseline));
  return parsed;
}

/** Every non-empty line of a bench's stdout, checked. */
export function benchLinesOf(stdout: string): Record<string, unknown>[] {
  return stdout
    .split("\n")
    .filter((line) => line !== "")
    .map(checkBenchLine);
}
