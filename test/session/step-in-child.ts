// A separate process for the restart test: opens the session store of a data folder,
// admits one prompt, runs one step, and prints the provider request as JSON.
// Usage: node --import tsx step-in-child.ts <dataDir> <sessionId> <branch> <wording> <prompt>

import { scriptedProvider } from "../../core/index.ts";
import { openHost, requestOf, testSource } from "./fixtures.ts";

const [dataDir, sessionId, branchValue, wording, prompt] = process.argv.slice(2) as [string, string, string, string, string];
const branch = testSource("core/branch", branchValue);
branch.state.wording = wording;
const host = await openHost(dataDir, { providers: { scripted: scriptedProvider() }, core: [branch.core] });
try {
  await host.prompt(sessionId, prompt);
  process.stdout.write(JSON.stringify(requestOf(await host.step(sessionId))));
} finally {
  await host.close();
}
