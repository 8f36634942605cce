// Owns the provider-neutral declaration of a tool the model may call. ProviderRequest
// carries no tool declarations, so adapters take them as configuration.

/** A tool the model may call: its name, what it does, and a JSON Schema for its input. */
export interface ToolDefinition {
  readonly name: string;
  readonly description?: string;
  /** A JSON Schema object (for example a TypeBox `Type.Object`). */
  readonly inputSchema: { readonly type: "object"; readonly [keyword: string]: unknown };
}
