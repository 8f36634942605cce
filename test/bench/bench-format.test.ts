// The bench result format: every line a bench prints is one JSON object with exactly
// {bench, metric, value, unit, baseline, ratio}, numbers finite and ratio = value / baseline.
// The line and median helpers here; a bench and the runner run for real, in child
// processes, in bench-runner.long.test.ts (`npm run test:long`).

import { expect } from "chai";
import { benchLine, isBenchLine, median } from "../../scripts/bench/measure.ts";

describe("bench format", () => {
  it("benchLine rounds value and baseline to 3 significant digits and the ratio to 4 significant digits", () => {
    const line = benchLine({ bench: "b", metric: "m", value: 2.34567, unit: "ms", baseline: 1.23456 });
    expect(line).to.deep.equal({ bench: "b", metric: "m", value: 2.35, unit: "ms", baseline: 1.23, ratio: 1.911 });
    expect(JSON.stringify(line)).to.equal('{"bench":"b","metric":"m","value":2.35,"unit":"ms","baseline":1.23,"ratio":1.911}');
    expect(benchLine({ bench: "b", metric: "m", value: 0.235, unit: "MiB", baseline: 5680 }).ratio).to.equal(0.00004137);
    expect(() => benchLine({ bench: "b", metric: "m", value: 1, unit: "ms", baseline: 0 })).to.throw(RangeError);
    expect(isBenchLine('{"bench":"b","metric":"m","value":1,"unit":"ms","baseline":1,"ratio":1,"extra":0}')).to.equal(false);
    expect(isBenchLine('{"metric":"m","bench":"b","value":1,"unit":"ms","baseline":1,"ratio":1}')).to.equal(false);
    expect(isBenchLine('{"bench":"b","metric":"m","value":"1","unit":"ms","baseline":1,"ratio":1}')).to.equal(false);
  });

  it("median takes the middle value, or the mean of the middle two", () => {
    expect(median([3, 1, 2])).to.equal(2);
    expect(median([4, 1, 3, 2])).to.equal(2.5);
    expect(() => median([])).to.throw(RangeError);
  });
});
