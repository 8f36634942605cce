// The registry author's own test: every rule of a context-host registry, as mocha tests.

import { describeRegistryConformance } from "context-host/conformance";
import { ListRegistry } from "../src/list-registry.ts";

describeRegistryConformance("ListRegistry", () => new ListRegistry());
