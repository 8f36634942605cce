// Runs the recording upstream as a standalone server, for capturing interactive CLI sessions
// by hand (e.g. a CLI driven in tmux). Writes every request as one JSON line to OUT.
//
//   npx tsx test/proxy/agents/serve-recorder.ts [PORT] [OUT.jsonl]
import { appendFileSync } from "node:fs";
import { startRecordingUpstream } from "./recording-upstream.ts";

const port = Number(process.argv[2] ?? 0);
const out = process.argv[3] ?? "recorded-requests.jsonl";
const upstream = await startRecordingUpstream({ log: true }, port);
let written = 0;
const timer = setInterval(() => {
  for (; written < upstream.requests.length; written++) {
    const r = upstream.requests[written]!;
    appendFileSync(out, `${JSON.stringify({ ...r, rawBody: r.rawBody.toString("base64") })}\n`);
  }
}, 200);
process.stdout.write(`${upstream.url}\n`);
const stop = () => {
  clearInterval(timer);
  void upstream.close().then(() => process.exit(0));
};
process.on("SIGINT", stop);
process.on("SIGTERM", stop);
