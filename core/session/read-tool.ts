// Owns the `read` tool: the model reads a project file through the host's project
// file access, which is how nested instruction files are discovered.

import Type from "typebox";
import { Compile } from "typebox/compile";
import { ToolInputInvalid } from "./errors.ts";
import type { Tool } from "./runtime.ts";
import type { ToolDefinition } from "./tool-definition.ts";

const ReadInputSchema = Type.Object({
  path: Type.String({ minLength: 1, description: "file path, relative to the working folder" }),
});
const ReadInput = Compile(ReadInputSchema);

/** The `read` tool's declaration, for providers that must declare tools (`anthropicProvider({ tools })`). */
export const readToolDefinition: ToolDefinition = {
  name: "read",
  description: "Read a UTF-8 text file of the project. Paths are relative to the working folder.",
  inputSchema: ReadInputSchema as unknown as ToolDefinition["inputSchema"],
};

/** `read({ path })`: the UTF-8 text of a project file, relative to the session's location. */
export const readTool: Tool = async (input, context) => {
  if (!ReadInput.Check(input)) {
    const first = ReadInput.Errors(input)[0];
    throw new ToolInputInvalid({ tool: "read", field: first?.instancePath ?? "", reason: first?.message ?? "expected { path }" });
  }
  return context.files.readFile(input.path);
};
