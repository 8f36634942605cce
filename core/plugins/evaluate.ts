// Owns the second seam of plugin loading: evaluate. A bundle runs as a CommonJS module that
// nothing caches, so once a generation is swapped out its code can be garbage-collected
// (ESM `import()` cannot do this: Node never evicts an ES module).

import { createRequire } from "node:module";
import vm from "node:vm";
import * as typebox from "typebox";
import * as typeboxCompile from "typebox/compile";
import * as typeboxValue from "typebox/value";
import { ContextHostError } from "../base/errors.ts";
import * as pluginApi from "./api.ts";
import type { PluginBundle } from "./bundle.ts";
import { bundleName } from "./locations.ts";

/**
 * A copy of a module's namespace marked `__esModule`, so that a CommonJS bundle's `import x from`
 * gets its `default`.
 */
function asRequired(namespace: object): object {
  const marked = Object.defineProperty({ ...namespace }, "__esModule", { value: true });
  return Object.freeze(marked);
}

/**
 * What `context-host` and `context-host/plugin` are inside a plugin: the plugin API's named exports
 * only (bundled, a namespace may carry a `default`).
 */
const pluginApiExports = Object.entries(pluginApi).filter(([name]) => name !== "default");
const pluginApiModule = asRequired(Object.fromEntries(pluginApiExports));

const hostRequire = createRequire(import.meta.url);

/** What evaluating a bundle reads of it. */
export type Evaluable = Pick<PluginBundle, "entry" | "code" | "baseDir" | "ownDependenciesFirst">;

/**
 * A plugin imported an entry of the host's package other than the plugin API
 * (`context-host/store`, `context-host/conformance`, …): plugins get `context-host` and
 * `context-host/plugin` only, never the store, the runtime or `createHost` (decision 011).
 */
export class PluginImportRefused extends ContextHostError {
  readonly specifier: string;
  /** The plugin's entry file. */
  readonly entry: string;
  constructor(options: { readonly specifier: string; readonly entry: string }) {
    const available = `only "context-host" and "context-host/plugin" are available to plugins`;
    super(`plugin ${options.entry}: import of ${JSON.stringify(options.specifier)} refused; ${available}`);
    this.specifier = options.specifier;
    this.entry = options.entry;
  }
}

/**
 * TypeBox as the host's own code imported it: under tsx `require("typebox")` compiles a second
 * copy, and a plugin would build its schemas with TypeBox objects the host has never seen. Each
 * is marked `__esModule` on a plugin's first `require` of it (copying costs a worker's start-up time).
 */
const typeboxModules = new Map<string, object>([
  ["typebox", typebox],
  ["typebox/compile", typeboxCompile],
  ["typebox/value", typeboxValue],
]);

/** TypeBox's module `specifier` as `require` returns it, if it is one. */
function typeboxModule(specifier: string): object | undefined {
  const namespace = typeboxModules.get(specifier);
  if (namespace === undefined || !("default" in namespace) || "__esModule" in namespace) return namespace;
  const required = asRequired(namespace);
  typeboxModules.set(specifier, required);
  return required;
}

/**
 * A plugin's `require`: the plugin API module, no other entry of the host's package, the
 * host's TypeBox; other packages from the host first (one shared copy), then from the
 * plugin's folder; a package's plugin from its package first, so it gets what it declares
 * (decision 131).
 */
function pluginRequire(bundle: Evaluable): (specifier: string) => unknown {
  const ownRequire = createRequire(bundle.entry);
  const isOwnFirst = bundle.ownDependenciesFirst === true;
  const [first, then] = isOwnFirst ? [ownRequire, hostRequire] : [hostRequire, ownRequire];
  return (specifier) => {
    if (specifier === "context-host" || specifier === "context-host/plugin") return pluginApiModule;
    if (specifier.startsWith("context-host/")) {
      throw new PluginImportRefused({ specifier, entry: bundle.entry });
    }
    const typeboxRequired = typeboxModule(specifier);
    if (typeboxRequired !== undefined) return typeboxRequired;
    try {
      return first(specifier);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "MODULE_NOT_FOUND") throw error;
      return then(specifier);
    }
  };
}

/** Evaluates a bundle as a fresh CommonJS module; returns its exports, throws what its module code throws. */
export function evaluateBundle(bundle: Evaluable, generation: number): Record<string, unknown> {
  const run = vm.compileFunction(bundle.code, ["exports", "require", "module", "__filename", "__dirname"], {
    filename: bundleName(bundle, generation),
  });
  const module = { exports: {} as Record<string, unknown> };
  run(module.exports, pluginRequire(bundle), module, bundle.entry, bundle.baseDir);
  return module.exports;
}
