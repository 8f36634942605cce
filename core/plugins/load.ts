// Owns the load of one plugin generation, in-process: bundle → evaluate → activate, as
// one function with a tagged result, and the bundle step every load starts with.
// `loader.ts` gives both isolations one load on top of it. Nothing here touches the
// registry or the plugin set's entries; a loaded generation is swapped in by the caller.

import type { AwilixContainer } from "awilix";
import type { DiagnosticPhase } from "../base/diagnostics.ts";
import { messageOf } from "../base/errors.ts";
import { BundleFailed, bundlePlugin, type PluginBundle } from "./bundle.ts";
import { evaluateBundle, locationsOf } from "./evaluate.ts";
import { type ActivatedGeneration, ActivationFailed, activateGeneration } from "./generation.ts";
import type { BundleLocations, Location } from "./locations.ts";

/** What a load needs besides the file: the host's services and rules. */
export interface LoadContext {
  /** The host's root awilix container: clock, logger, location. */
  readonly container: AwilixContainer;
  /** Plugin settings by plugin name. */
  readonly settings: Readonly<Record<string, unknown>>;
  readonly setupDeadlineMs: number;
  /** Namespaces no plugin may take (`core` and the host's core sources'). */
  readonly reservedNamespaces: ReadonlySet<string>;
}

export interface LoadRequest {
  readonly file: string;
  /** The generation number this load would become. */
  readonly generation: number;
  /** Hash of the last bundle a load was attempted with: identical content is not loaded again. */
  readonly attemptedHash: string | undefined;
  /** The plugin came from a package: its imports resolve from the package first (decision 131). */
  readonly ownDependenciesFirst?: boolean;
}

/** Why a load failed, as a diagnostic will say it. */
export interface LoadFault {
  readonly phase: DiagnosticPhase;
  readonly message: string;
  readonly plugin?: string;
  readonly key?: string;
  readonly location?: Location;
}

/** The outcome of one load. Every kind says which files it read (the plugin's watched inputs). */
export type LoadResult =
  /** The bundle is identical to the last attempted one: nothing was evaluated. */
  | { readonly kind: "unchanged"; readonly inputs: readonly string[]; readonly hash: string }
  /** esbuild failed: the bundle hash is unknown. */
  | { readonly kind: "bundle-failed"; readonly inputs: readonly string[]; readonly fault: LoadFault }
  /** The module, its definition, its config or its setup failed. */
  | { readonly kind: "failed"; readonly inputs: readonly string[]; readonly hash: string; readonly fault: LoadFault }
  | {
      readonly kind: "activated";
      readonly inputs: readonly string[];
      readonly hash: string;
      readonly activated: ActivatedGeneration;
      readonly locations: BundleLocations;
    };

/**
 * The first step of every load, in-process or isolated: bundle, and stop there when the
 * bundle failed or is the one last attempted.
 */
export async function bundleForLoad(
  request: LoadRequest,
): Promise<
  Extract<LoadResult, { kind: "unchanged" | "bundle-failed" }> | { readonly kind: "bundled"; readonly bundle: PluginBundle }
> {
  let bundle: PluginBundle;
  try {
    bundle = await bundlePlugin(request.file, { ownDependenciesFirst: request.ownDependenciesFirst === true });
  } catch (error) {
    const isBundleFailure = error instanceof BundleFailed;
    return {
      kind: "bundle-failed",
      inputs: isBundleFailure ? error.inputs : [request.file],
      fault: {
        phase: "bundle",
        message: messageOf(error),
        ...(isBundleFailure && error.location !== undefined ? { location: error.location } : {}),
      },
    };
  }
  if (request.attemptedHash === bundle.hash) return { kind: "unchanged", inputs: bundle.inputs, hash: bundle.hash };
  return { kind: "bundled", bundle };
}

/** Bundles, evaluates and activates one generation of the plugin at `request.file`, in this process. */
export async function loadGeneration(request: LoadRequest, context: LoadContext): Promise<LoadResult> {
  const bundled = await bundleForLoad(request);
  if (bundled.kind !== "bundled") return bundled;
  const { bundle } = bundled;
  const { inputs, hash } = bundle;
  const locations = locationsOf(bundle, request.generation);
  try {
    let exports: Record<string, unknown>;
    try {
      exports = evaluateBundle(bundle, request.generation);
    } catch (error) {
      throw new ActivationFailed({ phase: "evaluate", reason: `module code threw: ${messageOf(error)}`, cause: error });
    }
    const activated = await activateGeneration({
      exports,
      generation: request.generation,
      container: context.container,
      settings: context.settings,
      setupDeadlineMs: context.setupDeadlineMs,
      reservedNamespaces: context.reservedNamespaces,
    });
    return { kind: "activated", inputs, hash, activated, locations };
  } catch (error) {
    const failure =
      error instanceof ActivationFailed ? error : new ActivationFailed({ phase: "evaluate", reason: messageOf(error) });
    const location = locations.locate(failure.cause ?? failure);
    return {
      kind: "failed",
      inputs,
      hash,
      fault: {
        phase: failure.phase,
        message: failure.message,
        ...(failure.plugin === undefined ? {} : { plugin: failure.plugin }),
        ...(failure.key === undefined ? {} : { key: failure.key }),
        ...(location === undefined ? {} : { location }),
      },
    };
  }
}
