// A consumer with no Node.js types at all (tsconfig.no-node-types.json: `types: []`, and
// the package's declarations checked too, skipLibCheck off): a host and a plugin through
// the entries a host and a plugin author use. Type-checked, never run.

import { createHost, type HostOptions, scriptedProvider } from "context-host";
import { definePlugin } from "context-host/plugin";
import * as SystemContext from "context-host/system-context";
import Type from "typebox";

const options: HostOptions = {
  providers: { scripted: scriptedProvider() },
  instructions: { globalFile: false },
  onDiagnostic: false,
};

export async function reply(): Promise<string> {
  const host = await createHost(options);
  const id = await host.createSession({ location: "/project", provider: "scripted", model: "m" });
  await host.prompt(id, "Hello");
  const result = await host.step(id);
  await host.close();
  return result.kind === "replied" ? result.reply.text : result.kind;
}

export default definePlugin({
  name: "tides",
  setup(api) {
    api.source({
      key: "tides/next",
      schema: Type.Object({ high: Type.String() }),
      load: () => ({ high: "06:12" }),
      baseline: (t) => `High tide at ${t.high}.`,
      update: (_previous, t) => `High tide is now at ${t.high}.`,
    });
  },
});

export const empty: SystemContext.SystemContext = SystemContext.empty;
