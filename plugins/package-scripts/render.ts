// Pure renderers of `package-scripts/scripts`: a short list of the newly effective scripts.

import path from "node:path";
import type { PackageScripts } from "./read.ts";

function label(value: PackageScripts): string {
  const file = path.join(value.directory, "package.json");
  const manager = value.packageManager === undefined ? "" : `; package manager ${value.packageManager}`;
  return `${value.name === null ? "" : `${value.name}, `}${file}${manager}`;
}

function list(value: PackageScripts): string {
  if (value.scripts.length === 0) return "(none)";
  const lines = value.scripts.map((script) => `- ${script.name}: ${script.command}`);
  if (value.omitted > 0) lines.push(`- … and ${value.omitted} more`);
  return lines.join("\n");
}

export function renderBaseline(value: PackageScripts): string {
  return `Package scripts (${label(value)}):\n${list(value)}`;
}

export function renderUpdate(_previous: PackageScripts, value: PackageScripts): string {
  return `Package scripts are now (${label(value)}):\n${list(value)}`;
}

export function renderRemoved(previous: PackageScripts): string {
  return `${path.join(previous.directory, "package.json")} no longer exists; its package scripts no longer apply.`;
}
