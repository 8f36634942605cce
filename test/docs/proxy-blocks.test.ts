// The proxy's documentation runs (issue 47): every shell, TOML and JSON block of README's
// "Claude Code and Codex in one minute" and of docs/proxy.md is carried out. A
// `context-host proxy` line is run as the command line runs it (on a free port, against a
// fake upstream); an agent's setting (the env var, Codex's config.toml, opencode's and pi's
// JSON) is read as the agent reads it, and a request that agent really sent (the captured
// fixtures) is sent to the URL it names, which must reach the proxy and come back with
// the Baseline in place. The TypeScript block of docs/proxy.md runs with the other doc blocks.

import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { expect } from "chai";
import { main } from "../../scripts/cli/main.ts";
import { parseProxyArgs } from "../../scripts/cli/proxy.ts";
import { type FakeUpstream, startFakeUpstream } from "../proxy/fake-upstream.ts";

const root = path.resolve(import.meta.dirname, "../..");

interface Block {
  readonly doc: string;
  readonly line: number;
  readonly language: string;
  readonly text: string;
}

/** The fenced blocks of `doc` in other languages than ts/js, within the section headed `section` when given. */
function blocksOf(doc: string, section?: string): Block[] {
  let text = readFileSync(path.join(root, doc), "utf8");
  let offset = 0;
  if (section !== undefined) {
    const start = text.indexOf(`## ${section}`);
    expect(start, `${doc} has a section "${section}"`).to.be.at.least(0);
    const end = text.indexOf("\n## ", start + 3);
    offset = text.slice(0, start).split("\n").length - 1;
    text = text.slice(start, end === -1 ? undefined : end);
  }
  const blocks: Block[] = [];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const fence = /^```(sh|toml|json)\s*$/.exec(lines[i] as string);
    if (fence === null) continue;
    const end = lines.indexOf("```", i + 1);
    blocks.push({ doc, line: offset + i + 1, language: fence[1] as string, text: lines.slice(i + 1, end).join("\n") });
    i = end;
  }
  return blocks;
}

const fixture = (agent: string, file: string) =>
  JSON.parse(readFileSync(path.join(root, "test/proxy/fixtures", agent, file), "utf8")) as {
    path: string;
    headers: Record<string, string>;
    body: unknown;
  };

const documented = [...blocksOf("README.md", "Claude Code and Codex in one minute"), ...blocksOf("docs/proxy.md")];

describe("the proxy's documented commands and settings", () => {
  let dir = "";
  let upstream: FakeUpstream;
  let stop: () => void = () => {};
  let running: Promise<number> | undefined;
  let url = "";
  const out: string[] = [];

  before(async () => {
    dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), "proxy-docs-")));
    mkdirSync(path.join(dir, "plugins"));
    writeFileSync(
      path.join(dir, "plugins", "notes.ts"),
      `import Type from "typebox";
import { definePlugin } from "context-host/plugin";
export default definePlugin({
  name: "notes",
  setup(api) {
    api.source({ key: "notes/today", schema: Type.String(), load: () => "ship it", baseline: (v) => "Notes: " + v, update: (_p, v) => "Notes now: " + v });
  },
});
`,
    );
    upstream = await startFakeUpstream();
  });
  after(async () => {
    stop();
    await running;
    await upstream.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("the documents hold the blocks this test runs", () => {
    expect(documented.map((block) => block.language)).to.include.members(["sh", "toml", "json"]);
  });

  for (const block of documented) {
    it(`${block.doc}:${block.line} (${block.language}) runs`, async () => {
      const proxyUrl = async () => {
        if (running === undefined) throw new Error("no proxy command ran before this block");
        return url;
      };
      /** Sends a captured request to `base` + the API path, and checks it came back through the proxy with the Baseline. */
      const replay = async (base: string, agent: string, file: string, apiPath: string) => {
        const captured = fixture(agent, file);
        const local = base.replace("http://127.0.0.1:4100", await proxyUrl());
        const headers: Record<string, string> = {};
        for (const [name, value] of Object.entries(captured.headers)) {
          if (!["host", "content-length", "connection", "accept-encoding"].includes(name)) headers[name] = String(value);
        }
        const before = upstream.requests.length;
        const response = await fetch(`${local}${apiPath}`, { method: "POST", headers, body: JSON.stringify(captured.body) });
        expect(response.status).to.equal(200);
        await response.text();
        expect(upstream.requests.length).to.equal(before + 1);
        expect(upstream.requests.at(-1)?.raw).to.contain("Notes: ship it");
      };
      if (block.language === "sh") {
        for (const raw of block.text.split("\n")) {
          const line = raw.replace(/\s+#.*$/, "").trim();
          if (line === "") continue;
          const words = line.split(/\s+/);
          if (words[0] === "npx" && words[1] === "context-host" && words[2] === "proxy") {
            const args = words.slice(2);
            if (args.some((arg) => arg.startsWith("postgres://"))) {
              // A fleet's store is a server of its own: the command is read as the command line reads it (test/proxy runs fleets).
              expect(parseProxyArgs(args.slice(1), dir).store).to.match(/^postgres:\/\//);
              continue;
            }
            if (running !== undefined) {
              // One proxy serves the blocks; a later command's arguments are read as the command line reads them.
              expect(parseProxyArgs(args.slice(1), dir).port).to.equal(4100);
              continue;
            }
            const stopped = new Promise<void>((resolve) => {
              stop = resolve;
            });
            const extra = ["--port", "0", "--data-dir", path.join(dir, ".context-host")];
            const upstreams = ["--anthropic-upstream", upstream.url, "--openai-upstream", upstream.url];
            running = main([...args, ...extra, ...upstreams], {
              cwd: dir,
              out: (text) => out.push(text),
              err: () => {},
              stop: stopped,
            });
            for (let i = 0; i < 500 && !out.some((text) => text.includes("listening on")); i++) {
              await new Promise((resolve) => setTimeout(resolve, 20));
            }
            url = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out.join("\n"))?.[1] as string;
            expect(url, "the proxy printed its URL").to.be.a("string");
            expect(out.join("\n")).to.contain("plugins: notes");
          } else if (/^ANTHROPIC_BASE_URL=\S+ claude$/.test(line)) {
            await replay(
              line.slice("ANTHROPIC_BASE_URL=".length, line.indexOf(" ")),
              "claude-code",
              "01-turn1-messages.json",
              "/v1/messages?beta=true",
            );
          } else {
            throw new Error(`${block.doc}:${block.line}: a line this test does not know how to run: ${line}`);
          }
        }
      } else if (block.language === "toml") {
        // Codex's config: the provider it names, on the Responses wire, at the base URL.
        const value = (key: string) => new RegExp(`^${key} = "([^"]*)"$`, "m").exec(block.text)?.[1];
        const provider = value("model_provider");
        expect(block.text).to.contain(`[model_providers.${provider}]`);
        expect(value("wire_api")).to.equal("responses");
        await replay(value("base_url") as string, "codex-gpt-5.5", "01-turn1-responses.json", "/responses");
      } else {
        const json = JSON.parse(block.text) as {
          provider?: { anthropic: { options: { baseURL: string } } };
          providers?: Record<string, { baseUrl: string; api: string }>;
        };
        if (json.provider !== undefined) {
          await replay(json.provider.anthropic.options.baseURL, "opencode", "02-turn1-messages.json", "/messages");
        } else {
          const [pi] = Object.values(json.providers ?? {});
          expect(pi?.api).to.equal("openai-completions");
          await replay(pi?.baseUrl as string, "pi", "01-turn1-chat-completions.json", "/chat/completions");
        }
      }
    });
  }
});
