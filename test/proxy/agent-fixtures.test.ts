// The proxy on request bodies captured from the real agent CLIs (issue 47; the fixtures and
// how they were captured: test/proxy/fixtures/README.md). Each agent's two turns are replayed
// through the proxy, a Context Source changing between them: turn 1 carries the Baseline,
// turn 2 extends turn 1 and carries the change once, after the newest user message; side
// requests are conversations of their own; nothing of the client's is lost or reordered.

import { mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { expect } from "chai";
import { canonicalJson } from "../../core/proxy/canonical.ts";
import { type ContextProxy, createContextProxy, type ProxyBoundaryEvent } from "../../core/proxy/proxy.ts";
import { testSource } from "../session/fixtures.ts";
import { type FakeUpstream, startFakeUpstream } from "./fake-upstream.ts";

interface Fixture {
  readonly method: string;
  readonly path: string;
  readonly headers: Record<string, string | string[]>;
  readonly body: Record<string, unknown> | undefined;
}

const fixturesRoot = path.join(import.meta.dirname, "fixtures");
const workspace = "/work/project";

/** The requests an agent sent to the model API, in order (HEAD probes left out). */
function fixturesOf(agent: string): { file: string; fixture: Fixture }[] {
  const folder = path.join(fixturesRoot, agent);
  return readdirSync(folder)
    .filter((file) => file.endsWith(".json"))
    .sort()
    .map((file) => ({ file, fixture: JSON.parse(readFileSync(path.join(folder, file), "utf8")) as Fixture }))
    .filter(({ fixture }) => fixture.method === "POST");
}

/** A fixture's body with the captured working folder replaced by `folder`. */
const bodyIn = (fixture: Fixture, folder: string) => JSON.parse(JSON.stringify(fixture.body).replaceAll(workspace, folder));

const listOf = (body: Record<string, unknown>): Record<string, unknown>[] =>
  (body.messages ?? body.input) as Record<string, unknown>[];

const agents = [
  { agent: "claude-code", sideFiles: [] },
  { agent: "claude-code-interactive", sideFiles: [] },
  { agent: "claude-code-2.1.197", sideFiles: [] },
  { agent: "claude-code-2.1.197-interactive", sideFiles: [] },
  { agent: "codex", sideFiles: [] },
  { agent: "codex-gpt-5.5", sideFiles: [] },
  { agent: "opencode", sideFiles: ["01-turn1-messages.json"] },
  { agent: "pi", sideFiles: [] },
] as const;

describe("the proxy on bodies captured from real agents", () => {
  let dir = "";
  let upstream: FakeUpstream;
  let proxy: ContextProxy;
  beforeEach(async () => {
    dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), "proxy-agents-")));
    upstream = await startFakeUpstream();
  });
  afterEach(async () => {
    await proxy?.close();
    await upstream.close();
    rmSync(dir, { recursive: true, force: true });
  });

  for (const { agent, sideFiles } of agents) {
    it(`${agent}: turn 1 carries the Baseline, turn 2 extends it and carries the change once, after the newest user message`, async () => {
      const branch = testSource("core/branch", "main");
      proxy = await createContextProxy({
        builtins: false,
        plugins: [],
        watch: false,
        core: [branch.core],
        dataDir: path.join(dir, ".context-host"),
        port: 0,
        upstreams: { anthropic: upstream.url, openai: upstream.url },
      });
      const seen: ProxyBoundaryEvent[] = [];
      proxy.onBoundary((event) => seen.push(event));
      const requests = fixturesOf(agent);
      const main = requests.filter(({ file }) => !(sideFiles as readonly string[]).includes(file));
      expect(main, "two main turns").to.have.length(2);
      for (const { file, fixture } of requests) {
        if (file === main[1]?.file) branch.state.value = "feature";
        const headers: Record<string, string> = {};
        for (const [name, value] of Object.entries(fixture.headers)) {
          if (!["host", "content-length", "connection", "accept-encoding"].includes(name)) headers[name] = String(value);
        }
        const response = await fetch(`${proxy.url}${fixture.path}`, {
          method: "POST",
          headers,
          body: JSON.stringify(bodyIn(fixture, dir)),
        });
        expect(response.status, file).to.equal(200);
        await response.text();
      }
      await until(() => seen.length === requests.length);
      const sent = upstream.requests.map((request) => request.body as Record<string, unknown>);
      const mainIndex = requests.map(({ file }) => file).indexOf(main[0]?.file as string);
      const [turn1, turn2] = [sent[mainIndex] as Record<string, unknown>, sent.at(-1) as Record<string, unknown>];
      const [event1, event2] = [seen[mainIndex] as ProxyBoundaryEvent, seen.at(-1) as ProxyBoundaryEvent];

      // One conversation, one epoch, in the folder the agent states.
      expect(event1.forwarded).to.equal("with-context");
      expect(event2.sessionId).to.equal(event1.sessionId);
      expect(event1.baseline).to.equal("core/branch is main");
      expect(event2.baseline).to.equal(undefined);
      expect(event2.epoch).to.deep.equal({ number: 1, reason: "initial" });
      expect(event2.update).to.equal("core/branch is now feature");
      expect(event1.location).to.equal(dir);
      for (const side of sideFiles) {
        const at = requests.map(({ file }) => file).indexOf(side);
        expect(seen[at]?.sessionId, `${side} is a conversation of its own`).not.to.equal(event1.sessionId);
      }

      // The Baseline once in each turn; the update once in turn 2, after its newest user message.
      const json1 = JSON.stringify(turn1);
      const json2 = JSON.stringify(turn2);
      expect(json1.split("core/branch is main").length - 1).to.equal(1);
      expect(json2.split("core/branch is main").length - 1).to.equal(1);
      expect(json2.split("core/branch is now feature").length - 1).to.equal(1);
      const list2 = listOf(turn2);
      const updateAt = list2.findIndex((item) => JSON.stringify(item).includes("core/branch is now feature"));
      const lastUser = list2.findLastIndex((item) => item.role === "user");
      expect(updateAt, "the update follows the newest user message or is in it").to.be.at.least(lastUser);

      // Turn 2 extends turn 1, compared without cache markers.
      const list1 = listOf(turn1);
      list1.forEach((item, index) => {
        expect(canonicalJson(list2[index]), `${agent} item ${index}`).to.equal(canonicalJson(item));
      });
      if (turn1.system !== undefined) expect(canonicalJson(turn2.system)).to.equal(canonicalJson(turn1.system));

      // Everything the client sent stays: each of its items, in order, and every other field.
      for (const [index, { fixture }] of requests.entries()) {
        const client = bodyIn(fixture, dir) as Record<string, unknown>;
        const forwarded = sent[index] as Record<string, unknown>;
        const { system: _s1, messages: _m1, input: _i1, ...clientRest } = client;
        const { system: _s2, messages: _m2, input: _i2, ...forwardedRest } = forwarded;
        expect(forwardedRest, `${agent} ${index}: fields besides the lists`).to.deep.equal(clientRest);
        const texts = (value: unknown): string[] => JSON.stringify(value).match(/"text":"(?:[^"\\]|\\.)*"/g) ?? [];
        const forwardedTexts = texts(forwarded);
        let from = 0;
        for (const text of texts(client)) {
          const found = forwardedTexts.indexOf(text, from);
          expect(found, `${agent} ${index}: the client's text ${text.slice(0, 60)} is forwarded in order`).to.be.at.least(0);
          from = found + 1;
        }
        if (forwarded.messages !== undefined && typeof forwarded.model === "string" && forwarded.model.startsWith("claude")) {
          const messages = forwarded.messages as Record<string, unknown>[];
          expect(JSON.stringify(messages.filter((message) => message.role === "system"))).not.to.contain("cache_control");
          expect(JSON.stringify(forwarded).split('"cache_control"').length - 1).to.be.at.most(4);
        }
      }
    });
  }
});

async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  expect(condition()).to.equal(true);
}
