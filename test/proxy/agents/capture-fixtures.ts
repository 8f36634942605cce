// Captures real request bodies from agent CLIs as test fixtures.
//
//   npx tsx test/proxy/agents/capture-fixtures.ts [claude-code|codex|opencode|pi ...]
//
// For each agent: starts the recording upstream, makes a git working folder and a HOME under
// os.tmpdir(), runs turn 1 ("hello") and a continue turn ("and again"), then writes one JSON
// file per request into test/proxy/fixtures/<agent>/ (credentials redacted, the temporary
// folders replaced by stable placeholders) plus the raw capture into $CAPTURE_RAW_DIR
// (default <tmpdir>/agent-capture-raw/<agent>.json) for inspection.
//
// Environment: CONTEXT_HOST_AGENT_CLIS (CLI install folder), CAPTURE_TIMEOUT_MS (per turn),
// CAPTURE_MODEL (model instead of the runner's default), CAPTURE_SUFFIX (folder suffix for a
// variant, e.g. "-gpt-5.5"), CAPTURE_EXTRA_ENV (JSON object of extra environment variables;
// "" removes one the runner sets), CAPTURE_RAW_DIR.
import { mkdir, readdir, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { AGENT_NAMES, type AgentName, agentCliVersion, makeHome, prepareWorkspace, runAgentTurn } from "./clis.ts";
import { fixturesRoot, label, toFixture } from "./fixtures.ts";
import { startRecordingUpstream } from "./recording-upstream.ts";

async function capture(agent: AgentName): Promise<void> {
  const upstream = await startRecordingUpstream({ log: true });
  const cwd = await prepareWorkspace();
  const home = await makeHome();
  const rawDir = process.env.CAPTURE_RAW_DIR ?? path.join(os.tmpdir(), "agent-capture-raw");
  await mkdir(rawDir, { recursive: true });
  const version = agentCliVersion(agent, home);
  process.stderr.write(`== ${agent} ${version}\n   cwd=${cwd}\n   home=${home}\n   upstream=${upstream.url}\n`);
  const turns: { turn: number; firstSeq: number; result: Awaited<ReturnType<typeof runAgentTurn>> }[] = [];
  const prompts = ["hello", "and again"];
  for (const [i, prompt] of prompts.entries()) {
    const firstSeq = upstream.requests.length + 1;
    const result = await runAgentTurn(agent, {
      baseUrl: upstream.url,
      cwd,
      home,
      prompt,
      continue: i > 0,
      ...(process.env.CAPTURE_MODEL ? { model: process.env.CAPTURE_MODEL } : {}),
      timeoutMs: Number(process.env.CAPTURE_TIMEOUT_MS ?? 90_000),
      env: JSON.parse(process.env.CAPTURE_EXTRA_ENV ?? "{}") as Record<string, string>,
    });
    // Late side requests (titles, summaries) may still arrive just after the CLI exits.
    await new Promise((r) => setTimeout(r, 1500));
    process.stderr.write(
      `-- turn ${i + 1}: exit=${result.exitCode} signal=${result.signal} timedOut=${result.timedOut} ${result.durationMs}ms\n` +
        `   stdout: ${result.stdout.slice(0, 600)}\n   stderr: ${result.stderr.slice(-1500)}\n`,
    );
    turns.push({ turn: i + 1, firstSeq, result });
  }
  await upstream.close();
  const turnOf = (seq: number) => [...turns].reverse().find((t) => seq >= t.firstSeq)?.turn ?? 1;
  await writeFile(
    path.join(rawDir, `${agent}${process.env.CAPTURE_SUFFIX ?? ""}.json`),
    JSON.stringify(
      {
        agent,
        version,
        cwd,
        home,
        upstream: upstream.url,
        turns: turns.map((t) => ({ ...t.result, turn: t.turn, firstSeq: t.firstSeq })),
        requests: upstream.requests.map((r) => ({ ...r, turn: turnOf(r.seq), rawBody: r.rawBody.toString("base64") })),
      },
      null,
      2,
    ),
  );
  const outDir = path.join(fixturesRoot, `${agent}${process.env.CAPTURE_SUFFIX ?? ""}`);
  await mkdir(outDir, { recursive: true });
  for (const f of await readdir(outDir)) if (f.endsWith(".json")) await rm(path.join(outDir, f));
  const width = Math.max(2, String(upstream.requests.length).length);
  for (const r of upstream.requests) {
    const name = `${String(r.seq).padStart(width, "0")}-turn${turnOf(r.seq)}-${label(r)}.json`;
    const text = `${JSON.stringify(toFixture(r, cwd, home), null, 2)}\n`;
    await writeFile(path.join(outDir, name), text);
    const kb = Buffer.byteLength(text) / 1024;
    process.stderr.write(`   wrote ${agent}/${name} (${kb.toFixed(1)} KB)${kb > 200 ? "  <-- over 200 KB" : ""}\n`);
  }
}

const wanted = (process.argv.slice(2).length ? process.argv.slice(2) : AGENT_NAMES) as AgentName[];
for (const agent of wanted) {
  if (!AGENT_NAMES.includes(agent)) throw new Error(`unknown agent ${agent}`);
  await capture(agent);
}
