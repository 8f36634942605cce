// Owns the one load of a plugin generation: bundle here (esbuild), then evaluate and set
// up in the plugin's runner, whichever transport carries it, with one tagged result.
// Nothing here touches the registry or the plugin set's entries; a loaded generation is
// swapped in by the caller.

import type { DiagnosticPhase } from "../base/diagnostics.ts";
import { messageOf } from "../base/errors.ts";
import type { Scope } from "../base/scope.ts";
import { BundleFailed, bundlePlugin, type PluginBundle } from "./bundle.ts";
import { type HostedGeneration, type HostedPlugin, PluginCodeFault } from "./hosted-plugin.ts";
import type { Location } from "./locations.ts";

/** What a load needs besides the file: the host's rules. */
export interface LoadContext {
  /** Plugin settings by plugin name. */
  readonly settings: Readonly<Record<string, unknown>>;
  /** Namespaces no plugin may take (`core` and the host's core sources'). */
  readonly reservedNamespaces: ReadonlySet<string>;
}

/** One load's request: which file, as which generation, and when it started (`performance.now()`). */
export interface LoadRequest {
  readonly file: string;
  /** The generation number this load would become. */
  readonly generation: number;
  /** Hash of the last bundle a load was attempted with: identical content is not loaded again. */
  readonly attemptedHash: string | undefined;
  /** The plugin came from a package: its imports resolve from the package first (decision 131). */
  readonly ownDependenciesFirst?: boolean;
  readonly startedAt: number;
}

/** Why a load failed, as a diagnostic will say it. */
export interface LoadFault {
  readonly phase: DiagnosticPhase;
  readonly message: string;
  readonly plugin?: string;
  readonly key?: string;
  readonly location?: Location;
}

/** A generation ready to be swapped in: its scope (closing it runs its disposers) and its sources' keys. */
export interface LoadedGeneration extends HostedGeneration {
  readonly scope: Scope;
}

/** The outcome of one load. Every kind says which files it read (the plugin's watched inputs). */
export type Loaded =
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
      readonly loaded: LoadedGeneration;
      /** When this load started and when its generation was ready (bundle, evaluate, setup done), `performance.now()`. */
      readonly startedAt: number;
      readonly readyAt: number;
      readonly bundleMs: number;
      readonly evaluateMs: number;
      readonly setupMs: number;
    };

/** Bundles, stopping there when the bundle failed or is the one last attempted. */
async function bundleForLoad(
  request: LoadRequest,
): Promise<
  Extract<Loaded, { kind: "unchanged" | "bundle-failed" }> | { readonly kind: "bundled"; readonly bundle: PluginBundle }
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

/**
 * One load of a plugin: bundle, then evaluate and set up in its runner once `turn` (when
 * given) has come: the plugin code of loads that must not overlap waits for it.
 */
export async function loadPlugin(
  request: LoadRequest,
  runner: HostedPlugin,
  context: LoadContext,
  turn?: Promise<unknown>,
): Promise<Loaded> {
  const bundled = await bundleForLoad(request);
  if (bundled.kind !== "bundled") return bundled;
  const bundleMs = performance.now() - request.startedAt;
  const { bundle } = bundled;
  await turn;
  const outcome = await runner.load(bundle, request.generation, context.settings, [...context.reservedNamespaces]);
  if (outcome.kind === "failed") return { kind: "failed", inputs: bundle.inputs, hash: bundle.hash, fault: outcome.fault };
  return {
    kind: "activated",
    inputs: bundle.inputs,
    hash: bundle.hash,
    loaded: outcome.activated,
    startedAt: request.startedAt,
    readyAt: performance.now(),
    bundleMs,
    evaluateMs: outcome.evaluateMs,
    setupMs: outcome.setupMs,
  };
}

/** The location a fault of plugin code in its runner carries (on the error or a cause of it). */
export function locatedInRunner(error: unknown): Location | undefined {
  let current = error;
  for (let depth = 0; depth < 4 && current instanceof Error; depth++) {
    if (current instanceof PluginCodeFault) return current.location;
    current = current.cause;
  }
  return undefined;
}
