// The plugin author's own test file: every check of `context-host check`, as mocha tests.

import { describePluginConformance } from "context-host/conformance";

describePluginConformance(new URL("../plugins/tides.ts", import.meta.url).pathname, {
  settings: { harbor: "Brest" },
  location: new URL("./project", import.meta.url).pathname,
});
