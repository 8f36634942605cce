// Owns plugin discovery: which files in the configured plugin folders are plugins.
// A plugin is a `.ts`/`.js` file, or a folder with `index.ts` (or `index.js`).

import { existsSync, readdirSync } from "node:fs";
import path from "node:path";

/** A discovered plugin entry. `id` (file or folder name) orders loading. */
export interface PluginEntryFile {
  readonly id: string;
  readonly file: string;
}

const pluginFile = /^[^._][^/]*\.(ts|js)$/;
const notPlugin = /\.(d|test|spec)\.(ts|js)$/;

/** Lists the plugins of one folder, sorted by name. A missing folder has none. */
export function discoverPlugins(folder: string): PluginEntryFile[] {
  if (!existsSync(folder)) return [];
  const found: PluginEntryFile[] = [];
  for (const dirent of readdirSync(folder, { withFileTypes: true })) {
    const name = dirent.name;
    if (name.startsWith(".") || name.startsWith("_") || name === "node_modules") continue;
    const full = path.join(folder, name);
    if (dirent.isFile() && pluginFile.test(name) && !notPlugin.test(name)) {
      found.push({ id: name.replace(/\.(ts|js)$/, ""), file: full });
    } else if (dirent.isDirectory()) {
      const index = ["index.ts", "index.js"].map((f) => path.join(full, f)).find((f) => existsSync(f));
      if (index !== undefined) found.push({ id: name, file: index });
    }
  }
  return found.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : a.file < b.file ? -1 : 1));
}
