// A host in plain JavaScript: the host example of docs/api.md with the scripted provider and
// the plugins of ./plugins. Prints what one Safe Provider-Turn Boundary sent and stored.
// Usage: node host.mjs DATA_DIR

import path from "node:path";
import { createHost, formatDiagnostic, scriptedProvider } from "context-host";

const host = await createHost({
  dataDir: process.argv[2],
  providers: { scripted: scriptedProvider([{ text: "It is clear today." }]) },
  systemPrompt: "You are a weather agent.",
  plugins: [path.join(import.meta.dirname, "plugins")],
  watch: false,
  instructions: { globalFile: false },
});
try {
  const id = await host.createSession({ location: import.meta.dirname, provider: "scripted", model: "scripted-1" });
  await host.prompt(id, "What is the weather?");
  const result = await host.step(id);
  if (result.kind !== "replied") throw new Error(`expected a reply, got ${result.kind}`);
  const messages = await host.messages(id);
  const output = {
    system: result.request.system,
    reply: result.reply.text,
    roles: messages.map((message) => message.role),
    plugins: host.plugins().map((plugin) => plugin.name),
    diagnostics: host.diagnostics.map((diagnostic) => formatDiagnostic(diagnostic)),
  };
  process.stdout.write(`${JSON.stringify(output)}\n`);
} finally {
  await host.close();
}
