// Owns the `read` tool: the model reads a project file through the host's project
// file access, which is how nested instruction files are discovered.

import Type from "typebox";
import { Compile } from "typebox/compile";
import type { Tool } from "../session/runtime.ts";

const ReadInput = Compile(Type.Object({ path: Type.String({ minLength: 1 }) }));

/** `read({ path })`: the UTF-8 text of a project file, relative to the session's location. */
export const readTool: Tool = async (input, context) => {
  if (!ReadInput.Check(input)) {
    const first = ReadInput.Errors(input)[0];
    throw new Error(`read: invalid input at ${first?.instancePath || "/"}: ${first?.message ?? "expected { path }"}`);
  }
  return context.files.readFile(input.path);
};
