// Plugin packages laid out in a temp project's node_modules as npm installs them (without
// npm or the network), and replaced as `npm update` replaces them: for the tests of
// plugin packages (decisions 130, 131). The packed example package is installed for real
// in test/package/consumer.test.ts.

import fs from "node:fs";
import path from "node:path";

export interface PackageShape {
  readonly name: string;
  readonly version: string;
  /** `peerDependencies["context-host"]`; none when undefined. */
  readonly peer?: string;
  /** The `context-host` field's `plugins`; none when undefined. */
  readonly declared?: readonly string[];
  /** Files of the package by relative path. */
  readonly files: Readonly<Record<string, string>>;
}

/** The time npm gives every file it packs, and so every file it installs. */
const npmTime = new Date("1985-10-26T08:15:00.000Z");

function write(file: string, text: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text);
  // As npm extracts it (read now, modified when npm packed it): a file's time says nothing of its version.
  fs.utimesSync(file, new Date(), npmTime);
}

/** Lays a package out in `<project>/node_modules/<name>`; returns its folder. */
export function installPackage(project: string, shape: PackageShape): string {
  const root = path.join(project, "node_modules", shape.name);
  fs.rmSync(root, { recursive: true, force: true });
  for (const [file, text] of Object.entries(shape.files)) write(path.join(root, file), text);
  write(
    path.join(root, "package.json"),
    JSON.stringify({
      name: shape.name,
      version: shape.version,
      ...(shape.peer === undefined ? {} : { peerDependencies: { "context-host": shape.peer } }),
      ...(shape.declared === undefined ? {} : { "context-host": { plugins: shape.declared } }),
    }),
  );
  return root;
}

/** Replaces an installed package the way `npm update` does: the new version laid out beside it, then moved in. */
export function updatePackage(project: string, shape: PackageShape): void {
  const staging = path.join(project, "staging");
  const root = installPackage(staging, shape);
  const target = path.join(project, "node_modules", shape.name);
  const retired = path.join(project, "node_modules", `.${shape.name}-retired`);
  fs.renameSync(target, retired);
  fs.renameSync(root, target);
  fs.rmSync(retired, { recursive: true, force: true });
  fs.rmSync(staging, { recursive: true, force: true });
}
