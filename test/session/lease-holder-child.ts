// A separate process for the stale-holder tests: opens the session store of a data folder
// and steps a session against a provider that never answers, printing the request as JSON
// on one line once the provider is called; it then waits until it is killed.
// Usage: node lease-holder-child.ts <dataDir> <sessionId>

import { createHost, type ProviderRequest } from "../../core/index.ts";

const [dataDir, sessionId] = process.argv.slice(2) as [string, string];
const host = await createHost({
  dataDir,
  builtins: false,
  plugins: [],
  watch: false,
  providers: {
    scripted: {
      send(request: ProviderRequest) {
        process.stdout.write(`${JSON.stringify(request)}\n`);
        return new Promise(() => {});
      },
    },
  },
});
void host.step(sessionId);
// The provider's promise alone keeps nothing alive: this timer does, until the process is killed.
setInterval(() => {}, 60_000);
