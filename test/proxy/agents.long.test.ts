// The context proxy in front of the real agent CLIs (issue 47), run by `npm run test:long`
// only: each of Claude Code, Codex, opencode and pi, unchanged (the versions
// test/proxy/agents/clis.ts pins, installed into $CONTEXT_HOST_AGENT_CLIS), is pointed at a
// proxy whose one plugin reads a file; the proxy forwards to the recording upstream. Turn 1,
// the file changes, turn 2 continues the session. What the upstream received: turn 1 carries
// the plugin's Baseline once; turn 2 extends turn 1, carries the same Baseline once (one
// epoch) and the update once, after the newest user message; side requests (opencode's
// title) are conversations of their own. A CLI that cannot be installed or run fails its test.
// On a failure, what the upstream received, the proxy's events and its upstream requests'
// errors are saved under <tmpdir>/context-host-proxy-agents-long/ (printed with the failure),
// and the CLI's working folder and HOME are kept; with CONTEXT_HOST_PROXY_AGENTS_DUMP set, saved on success too.

import { subscribe, unsubscribe } from "node:diagnostics_channel";
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import type { ClientRequest } from "node:http";
import os from "node:os";
import path from "node:path";
import { expect } from "chai";
import { canonicalJson } from "../../core/proxy/canonical.ts";
import { type ContextProxy, createContextProxy, type ProxyBoundaryEvent } from "../../core/proxy/proxy.ts";
import {
  AGENT_NAMES,
  type AgentName,
  type AgentTurnResult,
  agentCliCacheDir,
  ensureAgentCli,
  makeHome,
  prepareWorkspace,
  runAgentTurn,
  wantedVersion,
} from "./agents/clis.ts";
import { type RecordedRequest, type RecordingUpstream, startRecordingUpstream } from "./agents/recording-upstream.ts";

const firstBranch = "alpha-7f3c";
const secondBranch = "beta-91d2";
const baselineText = `Checked-out branch: ${firstBranch}.`;
const updateText = `The checked-out branch is now ${secondBranch}.`;

/** A plugin whose one source is the text of `file`. */
const branchPlugin = (file: string) => `import { readFileSync } from "node:fs";
import Type from "typebox";
import { definePlugin } from "context-host/plugin";
export default definePlugin({
  name: "branch",
  setup(api) {
    api.source({
      key: "branch/current",
      schema: Type.String(),
      load: () => readFileSync(${JSON.stringify(file)}, "utf8").trim(),
      baseline: (v) => "Checked-out branch: " + v + ".",
      update: (_previous, v) => "The checked-out branch is now " + v + ".",
    });
  },
});
`;

const conversationKinds: readonly RecordedRequest["kind"][] = ["anthropic-messages", "responses", "chat-completions"];

/** A request that is not the conversation itself: opencode's title. */
const isSideRequest = (body: unknown) => JSON.stringify(body).includes("You are a title generator");

const listOf = (body: Record<string, unknown>): Record<string, unknown>[] =>
  (body.messages ?? body.input ?? []) as Record<string, unknown>[];

const occurrences = (text: string, part: string) => text.split(part).length - 1;

/** How a text appears inside JSON text. */
const asJson = (text: string) => JSON.stringify(text).slice(1, -1);

const describeTurn = (result: AgentTurnResult) =>
  `${result.command.join(" ")}\nexit ${result.exitCode}, signal ${result.signal}, timed out ${result.timedOut}\n` +
  `stdout: ${result.stdout.slice(-2000)}\nstderr: ${result.stderr.slice(-4000)}`;

describe("the context proxy in front of real agent CLIs (long)", function () {
  this.timeout(600_000);
  let dir = "";
  let home = "";
  let isFailed = false;
  // The errors of this process's HTTP requests (the proxy's to the upstream), as Node reports them: observed, not changed.
  const requestErrors: { time: number; host: string; path: string; reusedSocket: boolean; error: string }[] = [];
  const onRequestError = (message: unknown) => {
    const { request, error } = message as { request: ClientRequest; error: NodeJS.ErrnoException };
    requestErrors.push({
      time: Date.now(),
      host: String(request.getHeader("host") ?? request.host),
      path: request.path,
      reusedSocket: request.reusedSocket,
      error: `${error.code ?? ""} ${error.message}`.trim(),
    });
  };
  before(() => subscribe("http.client.request.error", onRequestError));
  after(() => unsubscribe("http.client.request.error", onRequestError));
  beforeEach(() => {
    requestErrors.length = 0;
  });
  let recorder: RecordingUpstream | undefined;
  let proxy: ContextProxy | undefined;
  afterEach(async () => {
    await proxy?.close();
    await recorder?.close();
    proxy = undefined;
    recorder = undefined;
    // A failed test's folders stay for inspection (its error names them).
    if (!isFailed) {
      rmSync(dir, { recursive: true, force: true });
      if (home !== "") rmSync(home, { recursive: true, force: true });
    }
    home = "";
    isFailed = false;
  });

  for (const agent of AGENT_NAMES) {
    it(`${agent}: turn 1 carries the plugin's Baseline once; turn 2 extends it, in the same epoch, with the update once after the newest user message`, async () => {
      let bin: string;
      try {
        bin = ensureAgentCli(agent);
      } catch (error) {
        throw new Error(
          `${agent} ${wantedVersion(agent)} could not be installed into ${agentCliCacheDir()} (CONTEXT_HOST_AGENT_CLIS): ${
            error instanceof Error ? error.message : String(error)
          }`,
        );
      }
      expect(bin, `${agent}'s executable`).to.be.a("string");

      dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), "proxy-agents-long-")));
      const branchFile = path.join(dir, "branch.txt");
      writeFileSync(branchFile, `${firstBranch}\n`);
      mkdirSync(path.join(dir, "plugins"));
      writeFileSync(path.join(dir, "plugins", "branch.ts"), branchPlugin(branchFile));
      recorder = await startRecordingUpstream();
      const diagnostics: unknown[] = [];
      proxy = await createContextProxy({
        port: 0,
        upstreams: { anthropic: recorder.url, openai: recorder.url },
        plugins: [path.join(dir, "plugins")],
        watch: true,
        builtins: false,
        dataDir: path.join(dir, ".context-host"),
        onDiagnostic: (diagnostic) => diagnostics.push(diagnostic),
      });
      expect(
        proxy.engine.plugins().map((plugin) => plugin.name),
        "the branch plugin is loaded",
      ).to.include("branch");
      const events: ProxyBoundaryEvent[] = [];
      proxy.onBoundary((event) => events.push(event));

      const cwd = await prepareWorkspace(path.join(dir, "project"));
      home = await makeHome();
      const turns: { result: AgentTurnResult; requests: RecordedRequest[] }[] = [];
      const upstream = recorder;
      const runTurn = async (prompt: string, isContinue: boolean) => {
        const from = upstream.requests.length;
        const result = await runAgentTurn(agent, {
          baseUrl: (proxy as ContextProxy).url,
          cwd,
          home,
          prompt,
          continue: isContinue,
          timeoutMs: 240_000,
        });
        // Late side requests (titles, summaries) may still arrive just after the CLI exits;
        // every conversation request the upstream saw has its proxy event once its response ended.
        await new Promise((resolve) => setTimeout(resolve, 1500));
        await until(
          () => events.length >= upstream.requests.filter((request) => conversationKinds.includes(request.kind)).length,
        );
        turns.push({ result, requests: upstream.requests.slice(from) });
        return result;
      };

      try {
        const turn1 = await runTurn("hello", false);
        expect(turn1.exitCode, `${agent} turn 1 through the proxy\n${describeTurn(turn1)}`).to.equal(0);
        writeFileSync(branchFile, `${secondBranch}\n`);
        const turn2 = await runTurn("and again", true);
        expect(turn2.exitCode, `${agent} turn 2 through the proxy\n${describeTurn(turn2)}`).to.equal(0);

        // The proxy answered every conversation request with the upstream's answer.
        const failed = events.filter((event) => event.outcome !== "relayed" || event.status !== 200);
        expect(
          failed.map((event) => ({ model: event.model, bytes: event.bytes, outcome: event.outcome, status: event.status })),
          `${agent}: conversation requests the proxy did not relay with the upstream's 200; its requests' errors: ${JSON.stringify(requestErrors)}`,
        ).to.deep.equal([]);

        const conversation = (requests: RecordedRequest[]) =>
          requests.filter((request) => conversationKinds.includes(request.kind));
        const mainOf = (requests: RecordedRequest[]) => conversation(requests).filter((request) => !isSideRequest(request.body));
        const eventOf = (request: RecordedRequest) => {
          const found = events.filter((event) => event.bytes === request.rawBody.length);
          expect(found, `one proxy event for upstream request #${request.seq} (${request.rawBody.length} bytes)`).to.have.length(
            1,
          );
          return found[0] as ProxyBoundaryEvent;
        };
        const main1 = mainOf(turns[0]?.requests ?? []);
        const main2 = mainOf(turns[1]?.requests ?? []);
        expect(main1, `${agent}: one main conversation request in turn 1`).to.have.length(1);
        expect(main2, `${agent}: one main conversation request in turn 2`).to.have.length(1);
        const [request1, request2] = [main1[0] as RecordedRequest, main2[0] as RecordedRequest];
        const [body1, body2] = [request1.body as Record<string, unknown>, request2.body as Record<string, unknown>];
        const [event1, event2] = [eventOf(request1), eventOf(request2)];

        // Every conversation request went upstream with context in place.
        for (const request of conversation(upstream.requests)) {
          const event = eventOf(request);
          expect(event.forwarded, `#${request.seq} ${request.path}: ${event.reason ?? ""}`).to.equal("with-context");
        }

        // One conversation, one epoch: the Baseline in turn 1 only, the update in turn 2.
        expect(event1.baseline, "turn 1 starts the epoch with the plugin's Baseline").to.be.a("string");
        expect(event1.baseline).to.contain(baselineText);
        expect(event1.epoch?.number).to.equal(1);
        expect(event2.sessionId, "turn 2 is the same conversation").to.equal(event1.sessionId);
        expect(event2.baseline, "turn 2 starts no new epoch").to.equal(undefined);
        expect(event2.epoch, "turn 2 is in turn 1's epoch").to.deep.equal(event1.epoch);
        expect(event2.update, "turn 2 admits the change").to.be.a("string");
        expect(event2.update).to.contain(updateText);
        expect(event2.updates, "turn 2 carries one update").to.equal(1);

        // The Baseline once in each turn; the update once, in turn 2 only.
        const json1 = JSON.stringify(body1);
        const json2 = JSON.stringify(body2);
        expect(occurrences(json1, asJson(event1.baseline as string)), "the whole Baseline once in turn 1").to.equal(1);
        expect(occurrences(json1, baselineText), "the plugin's Baseline text once in turn 1").to.equal(1);
        expect(occurrences(json1, updateText), "no update in turn 1").to.equal(0);
        expect(occurrences(json2, asJson(event1.baseline as string)), "the whole Baseline once in turn 2").to.equal(1);
        expect(occurrences(json2, baselineText), "the plugin's Baseline text once in turn 2").to.equal(1);
        expect(occurrences(json2, updateText), "the update text once in turn 2").to.equal(1);

        // The update follows the newest user message (or ends it).
        const list1 = listOf(body1);
        const list2 = listOf(body2);
        const updateAt = list2.findIndex((item) => JSON.stringify(item).includes(updateText));
        const lastUser = list2.findLastIndex((item) => item.role === "user");
        expect(lastUser, "turn 2 has a user message").to.be.at.least(0);
        expect(updateAt, "the update is in the message list").to.be.at.least(0);
        expect(updateAt, "the update follows the newest user message or is in it").to.be.at.least(lastUser);
        if (updateAt === lastUser) {
          const item = JSON.stringify(list2[updateAt]);
          expect(item.indexOf(updateText), "inside the newest user message, the update follows its text").to.be.greaterThan(
            item.lastIndexOf("and again"),
          );
        }

        // Turn 2 extends turn 1, compared without cache markers.
        expect(list2.length, "turn 2's list is longer than turn 1's").to.be.greaterThan(list1.length);
        list1.forEach((item, index) => {
          expect(canonicalJson(list2[index]), `${agent} item ${index} of turn 1 is turn 2's`).to.equal(canonicalJson(item));
        });
        if (body1.system !== undefined)
          expect(canonicalJson(body2.system), "the same system").to.equal(canonicalJson(body1.system));
        if (body1.instructions !== undefined) expect(body2.instructions, "the same instructions").to.equal(body1.instructions);

        // Side requests are conversations of their own.
        const sides = conversation(upstream.requests).filter((request) => isSideRequest(request.body));
        if (agent === "opencode") expect(sides, "opencode's title request").to.have.length.at.least(1);
        for (const side of sides) {
          expect(eventOf(side).sessionId, `side request #${side.seq} is a conversation of its own`).not.to.equal(
            event1.sessionId,
          );
        }
        if (process.env.CONTEXT_HOST_PROXY_AGENTS_DUMP) {
          console.error(`    ${agent}: saved in ${dump(agent, upstream, events, turns, { diagnostics, requestErrors })}`);
        }
      } catch (error) {
        isFailed = true;
        const saved = dump(agent, upstream, events, turns, { diagnostics, requestErrors });
        const note = `what the upstream received and the proxy's events: ${saved}; the CLI's working folder ${cwd}, its HOME ${home}`;
        console.error(`    ${agent}: ${note}`);
        if (error instanceof Error) error.message += `\n(${note})`;
        throw error;
      }
    });
  }
});

/** Saves what the upstream received, the proxy's events and the CLI's output; returns the folder. */
function dump(
  agent: AgentName,
  upstream: RecordingUpstream,
  events: readonly ProxyBoundaryEvent[],
  turns: readonly { result: AgentTurnResult; requests: RecordedRequest[] }[],
  extra: Record<string, unknown>,
): string {
  const root = path.join(os.tmpdir(), "context-host-proxy-agents-long");
  mkdirSync(root, { recursive: true });
  const folder = mkdtempSync(path.join(root, `${agent}-`));
  for (const request of upstream.requests) {
    const turn = turns.findIndex((t) => t.requests.includes(request)) + 1;
    const name = `${String(request.seq).padStart(2, "0")}-turn${turn}-${request.kind}.json`;
    const { rawBody: _raw, ...rest } = request;
    writeFileSync(path.join(folder, name), `${JSON.stringify(rest, null, 2)}\n`);
  }
  writeFileSync(path.join(folder, "events.json"), `${JSON.stringify(events, null, 2)}\n`);
  writeFileSync(path.join(folder, "diagnostics.json"), `${JSON.stringify(extra, null, 2)}\n`);
  writeFileSync(
    path.join(folder, "turns.json"),
    `${JSON.stringify(
      turns.map((t) => t.result),
      null,
      2,
    )}\n`,
  );
  return folder;
}

async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 1000 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 20));
  expect(condition(), "every conversation request's proxy event").to.equal(true);
}
