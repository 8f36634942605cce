// The conformance checks of one Context Source: a good source passes every check, and
// each purpose-made bad source fails the check written for it, naming its key.

import { expect } from "chai";
import Type, { type TSchema } from "typebox";
import { Value } from "typebox/value";
import { arbitraryOf, samplesOf } from "../../core/conformance/arbitrary.ts";
import { type CheckedSource, type CheckName, checkSource } from "../../core/conformance/source-checks.ts";
import { SystemContext } from "../../core/index.ts";

const options = { env: { location: "/work/project" }, deadlineMs: 100, maxTextLength: 200, samples: 15 };

const Weather = Type.Object({ city: Type.String({ minLength: 1 }), celsius: Type.Integer({ minimum: -60, maximum: 60 }) });

function source(overrides: Partial<CheckedSource> = {}, schema: TSchema = Weather): CheckedSource {
  return {
    key: "weather/today",
    schema,
    load: () => ({ city: "Oslo", celsius: 4 }),
    baseline: (v: { city: string; celsius: number }) => `Weather in ${v.city}: ${v.celsius} °C.`,
    update: (_p: unknown, v: { city: string; celsius: number }) => `Weather in ${v.city} is now ${v.celsius} °C.`,
    removed: (p: { city: string }) => `The weather for ${p.city} no longer applies.`,
    ...overrides,
  } as CheckedSource;
}

async function checksOf(candidate: CheckedSource): Promise<CheckName[]> {
  const findings = await checkSource(candidate, options);
  for (const finding of findings) {
    expect(finding.key).to.equal(candidate.key);
    expect(finding.message).to.be.a("string").and.not.equal("");
    expect(finding.fix).to.be.a("string").and.not.equal("");
  }
  return findings.map((f) => f.check);
}

describe("conformance: the checks of one Context Source", () => {
  it("a well-behaved source has no finding", async () => {
    expect(await checksOf(source())).to.deep.equal([]);
  });

  const bad: Array<[CheckName, string, Partial<CheckedSource>]> = [
    [
      "loader-settles",
      "a loader that throws",
      {
        load: () => {
          throw new Error("no network");
        },
      },
    ],
    ["loader-settles", "a loader that never settles", { load: () => new Promise(() => {}) }],
    [
      "value-schema",
      "a loader returning a value the schema rejects",
      { load: () => ({ city: "Oslo", celsius: "cold" }) as never },
    ],
    [
      "volatile-value",
      "a value with a timestamp that changes on every load",
      (() => {
        let n = 0;
        return { load: () => ({ city: "Oslo", celsius: n++ % 60 }) };
      })(),
    ],
    [
      "removal-renderer",
      "a source that becomes absent without a removal renderer",
      { load: () => SystemContext.absent, removed: undefined, examples: [{ city: "Oslo", celsius: 1 }] },
    ],
    [
      "renderer-throws",
      "a renderer that throws for some values",
      {
        baseline: (v: { celsius: number }) => {
          if (v.celsius < 0) throw new Error("below zero");
          return `${v.celsius}`;
        },
      } as never,
    ],
    ["renderer-text", "a renderer returning empty text", { update: () => "" }],
    ["renderer-text", "a renderer over the size limit", { baseline: (v: { city: string }) => `${v.city} `.repeat(100) } as never],
    [
      "renderer-pure",
      "a renderer that keeps state between calls",
      (() => {
        let calls = 0;
        return { baseline: (v: { city: string }) => `${v.city} (${calls++})` } as never;
      })(),
    ],
    [
      "renderer-mutates",
      "a renderer that changes its input",
      {
        baseline: (v: { city: string; celsius: number }) => {
          v.celsius += 1;
          return `${v.city}`;
        },
      } as never,
    ],
    [
      "renderer-clock",
      "a renderer that reads the clock",
      { baseline: (v: { city: string }) => `${v.city} as of ${new Date().getFullYear() > 0 ? "now" : ""}` } as never,
    ],
    [
      "renderer-clock",
      "a renderer that reads randomness",
      { baseline: (v: { city: string }) => (Math.random() >= 0 ? v.city : "") } as never,
    ],
    ["update-new-state", "an update that does not say the new value", { update: () => "The weather changed." }],
    [
      "update-repeats-previous",
      "an update that renders the previous value",
      { update: (p: { city: string; celsius: number }) => `Weather in ${p.city}: ${p.celsius} °C.` } as never,
    ],
  ];
  for (const [check, what, overrides] of bad) {
    it(`${check}: ${what}`, async () => {
      expect(await checksOf(source(overrides))).to.include(check);
    });
  }

  it("a codec that does not round-trip is caught with the path that changes", async () => {
    const Lossy = Type.Codec(Type.Number())
      .Decode((n) => Math.round(n))
      .Encode((n) => n + 0.5);
    const findings = await checkSource(
      source(
        {
          load: () => 3,
          baseline: (n: number) => `n is ${n}`,
          update: (_p: number, n: number) => `n is now ${n}`,
          removed: undefined,
        } as never,
        Lossy,
      ),
      options,
    );
    const roundTrip = findings.find((f) => f.check === "round-trip");
    expect(roundTrip?.message).to.contain("at /");
  });

  it("the clock watch restores Date, Math.random and performance.now, also when the renderer throws", async () => {
    const [RealDate, realRandom, realNow] = [Date, Math.random, performance.now];
    await checkSource(
      source({
        baseline: () => {
          throw new Error(String(Date.now() + Math.random()));
        },
      }),
      options,
    );
    expect(Date).to.equal(RealDate);
    expect(Math.random).to.equal(realRandom);
    expect(performance.now).to.equal(realNow);
  });

  it("generated values are values of the schema, reproducible by seed", () => {
    const Shape = Type.Object({
      name: Type.String({ minLength: 2, maxLength: 5 }),
      tags: Type.Array(Type.Union([Type.Literal("a"), Type.Literal("b")]), { maxItems: 3 }),
      size: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
      on: Type.Boolean(),
      nothing: Type.Null(),
    });
    const values = samplesOf(Shape, 50, 7);
    expect(values).to.have.length(50);
    for (const value of values) expect(Value.Check(Shape, value), JSON.stringify(value)).to.equal(true);
    expect(samplesOf(Shape, 50, 7)).to.deep.equal(values);
    expect(arbitraryOf({ type: "string", format: "email" })).to.equal(undefined);
  });
});
