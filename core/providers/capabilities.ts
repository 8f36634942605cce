// Owns capability tables: configuration that declares which models accept which
// wire features, so lowering decides from data rather than from model-name checks.

/** One row of a capability table: models whose id matches `model` get `capabilities`. */
export interface ModelRule<Capabilities> {
  /** Tested against the model id with `String.prototype.search`, so a `g` flag has no effect. */
  readonly model: RegExp;
  readonly capabilities: Partial<Capabilities>;
  /** Where the row's figures come from (a documentation page, an SDK's model list). */
  readonly source?: string;
  /** When the source was read (ISO date). */
  readonly date?: string;
}

/**
 * Ordered rows declaring model capabilities. Every matching row applies and later
 * rows override earlier ones, so a host can append its own rows to a default table.
 */
export type CapabilityTable<Capabilities> = readonly ModelRule<Capabilities>[];

/**
 * The capabilities of `model`: `defaults` overridden by each matching row of
 * `table` in order. Properties a row leaves `undefined` do not override.
 */
export function capabilitiesFor<Capabilities extends object>(
  table: CapabilityTable<Capabilities>,
  model: string,
  defaults: Capabilities,
): Capabilities {
  const result: Record<string, unknown> = { ...(defaults as Record<string, unknown>) };
  for (const rule of table) {
    if (model.search(rule.model) === -1) continue;
    for (const [name, value] of Object.entries(rule.capabilities)) {
      if (value !== undefined) result[name] = value;
    }
  }
  return result as Capabilities;
}
