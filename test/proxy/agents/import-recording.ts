// Turns a JSONL recording from serve-recorder.ts (e.g. an interactive session driven in tmux)
// into fixture files, the same way capture-fixtures.ts does.
//
//   npx tsx test/proxy/agents/import-recording.ts REC.jsonl FOLDER CWD HOME TURN_STARTS
//
// FOLDER: name under test/proxy/fixtures/; CWD, HOME: the temporary folders the CLI ran in
// (replaced by placeholders); TURN_STARTS: comma-separated request numbers that start turn
// 1, 2, ... (e.g. "1,3").
import { readFileSync } from "node:fs";
import { mkdir, readdir, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { fixturesRoot, label, toFixture } from "./fixtures.ts";
import type { RecordedRequest } from "./recording-upstream.ts";

const [file, folder, cwd, home, starts] = process.argv.slice(2);
if (!file || !folder || !cwd || !home || !starts) throw new Error("usage: REC.jsonl FOLDER CWD HOME TURN_STARTS");
const turnStarts = starts.split(",").map(Number);
const requests = readFileSync(file, "utf8")
  .split("\n")
  .filter((l) => l.trim())
  .map((l) => {
    const r = JSON.parse(l) as RecordedRequest & { rawBody: string };
    return { ...r, rawBody: Buffer.from(r.rawBody, "base64") } as RecordedRequest;
  });
const outDir = path.join(fixturesRoot, folder);
await mkdir(outDir, { recursive: true });
for (const f of await readdir(outDir)) if (f.endsWith(".json")) await rm(path.join(outDir, f));
const width = Math.max(2, String(requests.length).length);
for (const r of requests) {
  const turn = turnStarts.filter((s) => r.seq >= s).length || 1;
  const name = `${String(r.seq).padStart(width, "0")}-turn${turn}-${label(r)}.json`;
  await writeFile(path.join(outDir, name), `${JSON.stringify(toFixture(r, cwd, home), null, 2)}\n`);
  process.stderr.write(`wrote ${folder}/${name}\n`);
}
