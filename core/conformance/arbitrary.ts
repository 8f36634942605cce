// Owns generated inputs for conformance checks: fast-check arbitraries read off a
// source's TypeBox (JSON Schema) value schema, for the kinds sources use. A schema
// part it does not understand yields no arbitrary, and the checks fall back to the
// values the loader returned and the source's own `examples`.

import { createRequire } from "node:module";
import type * as FastCheck from "fast-check";
import { ConformanceSetupInvalid } from "./errors.ts";

let loaded: typeof FastCheck | undefined;

/**
 * fast-check, a dependency of the package: required at the first generated input rather
 * than imported, so that a host never loads it and the check worker's program resolves it
 * from the package instead of bundling it.
 */
function fastCheck(): typeof FastCheck {
  if (loaded !== undefined) return loaded;
  try {
    loaded = createRequire(import.meta.url)("fast-check") as typeof FastCheck;
  } catch (error) {
    throw new ConformanceSetupInvalid({
      suite: "the conformance checks",
      reason: `they need fast-check, a dependency of context-host that could not be loaded (reinstall context-host): ${error instanceof Error ? error.message.split("\n")[0] : String(error)}`,
    });
  }
  return loaded;
}

type Schema = Readonly<Record<string, unknown>>;

const isSchema = (value: unknown): value is Schema => typeof value === "object" && value !== null && !Array.isArray(value);

/** An arbitrary of the values `schema` accepts, or `undefined` when a part of it is out of reach. */
export function arbitraryOf(schema: unknown, depth = 0): FastCheck.Arbitrary<unknown> | undefined {
  const fc = fastCheck();
  if (!isSchema(schema) || depth > 6) return undefined;
  if ("const" in schema) return fc.constant(schema.const);
  if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as unknown[]));
  if (Array.isArray(schema.anyOf)) {
    const options = (schema.anyOf as unknown[]).map((part) => arbitraryOf(part, depth + 1));
    if (options.some((option) => option === undefined)) return undefined;
    return fc.oneof(...(options as FastCheck.Arbitrary<unknown>[]));
  }
  switch (schema.type) {
    case "string": {
      if (schema.pattern !== undefined || schema.format !== undefined) {
        return typeof schema.pattern === "string" ? fc.stringMatching(new RegExp(schema.pattern)) : undefined;
      }
      const minLength = typeof schema.minLength === "number" ? schema.minLength : 0;
      const maxLength = typeof schema.maxLength === "number" ? schema.maxLength : Math.max(minLength, 24);
      return fc.string({ minLength, maxLength });
    }
    case "integer":
      return fc.integer({
        min: typeof schema.minimum === "number" ? Math.ceil(schema.minimum) : -1_000_000,
        max: typeof schema.maximum === "number" ? Math.floor(schema.maximum) : 1_000_000,
      });
    case "number":
      return fc.double({
        min: typeof schema.minimum === "number" ? schema.minimum : -1e6,
        max: typeof schema.maximum === "number" ? schema.maximum : 1e6,
        noNaN: true,
        noDefaultInfinity: true,
      });
    case "boolean":
      return fc.boolean();
    case "null":
      return fc.constant(null);
    case "array": {
      const items = arbitraryOf(schema.items, depth + 1);
      if (items === undefined) return undefined;
      return fc.array(items, {
        minLength: typeof schema.minItems === "number" ? schema.minItems : 0,
        maxLength: typeof schema.maxItems === "number" ? schema.maxItems : 5,
      });
    }
    case "object": {
      const properties = isSchema(schema.properties) ? schema.properties : {};
      const required = new Set(Array.isArray(schema.required) ? (schema.required as string[]) : []);
      const record: Record<string, FastCheck.Arbitrary<unknown>> = {};
      for (const [name, part] of Object.entries(properties)) {
        const arbitrary = arbitraryOf(part, depth + 1);
        if (arbitrary === undefined) return undefined;
        record[name] = arbitrary;
      }
      // Optional properties are left out at random: that is what the schema allows.
      return fc.record(record, { requiredKeys: Object.keys(record).filter((name) => required.has(name)) });
    }
    default:
      return undefined;
  }
}

/** `count` values of `schema`, reproducible by `seed`; none when the schema is out of reach. */
export function samplesOf(schema: unknown, count: number, seed: number): unknown[] {
  const arbitrary = arbitraryOf(schema);
  if (arbitrary === undefined || count <= 0) return [];
  return fastCheck().sample(arbitrary, { numRuns: count, seed });
}
