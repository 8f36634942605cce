// `context-host proxy` (issue 47): the command line starts the proxy on the settings and
// plugins it is given, prints where to point each agent, one line per conversation
// request, and serves the inspector with each request's real cache usage.

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { expect } from "chai";
import { main } from "../../scripts/cli/main.ts";
import { parseProxyArgs } from "../../scripts/cli/proxy.ts";
import { type FakeUpstream, startFakeUpstream } from "../proxy/fake-upstream.ts";

const weatherPlugin = `import Type from "typebox";
import { definePlugin } from "context-host/plugin";
export default definePlugin({
  name: "weather",
  setup(api) {
    api.source({
      key: "weather/today",
      schema: Type.String(),
      load: () => "sunny",
      baseline: (v) => "Weather: " + v,
      update: (_p, v) => "Weather now: " + v,
    });
  },
});
`;

describe("context-host proxy (command line)", () => {
  let dir = "";
  let upstream: FakeUpstream;
  beforeEach(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "proxy-cli-"));
    upstream = await startFakeUpstream();
  });
  afterEach(async () => {
    await upstream.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("proxies with the project's plugins, prints a line per request, and the inspector shows the provider's cache usage", async () => {
    mkdirSync(path.join(dir, "plugins"));
    writeFileSync(path.join(dir, "plugins", "weather.ts"), weatherPlugin);
    const out: string[] = [];
    const err: string[] = [];
    let stop: () => void = () => {};
    const stopped = new Promise<void>((resolve) => {
      stop = resolve;
    });
    const running = main(["proxy", "--port", "0", "--anthropic-upstream", upstream.url, "--inspect=0"], {
      cwd: dir,
      out: (text) => out.push(text),
      err: (text) => err.push(text),
      stop: stopped,
    });
    await until(() => out.some((line) => line.includes("inspector: ")));
    const url = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out.join("\n"))?.[1] as string;
    expect(out.join("\n")).to.contain("plugins: weather");
    expect(out.join("\n")).to.contain(`ANTHROPIC_BASE_URL=${url} claude`);
    const response = await fetch(`${url}/v1/messages`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": "k" },
      body: JSON.stringify({
        model: "claude-opus-4-8",
        max_tokens: 10,
        messages: [{ role: "user", content: "hi" }],
        stream: true,
      }),
    });
    await response.text();
    expect(JSON.stringify(upstream.requests[0]?.body)).to.contain("Weather: sunny");
    await until(() => out.some((line) => line.startsWith("messages claude-opus-4-8")));
    expect(out.find((line) => line.startsWith("messages"))).to.match(
      /epoch 1, Baseline \(initial\), 0 in the request · 200 · cache read 30, written 5, uncached 12/,
    );
    const inspector = /inspector: (http:\/\/127\.0\.0\.1:\d+\/?)/.exec(out.join("\n"))?.[1] as string;
    const state = (await (await fetch(new URL("/api/state", inspector))).json()) as { sessions: { id: string }[] };
    const id = state.sessions[0]?.id as string;
    const session = (await (await fetch(new URL(`/api/sessions/${encodeURIComponent(id)}`, inspector))).json()) as {
      baseline: string;
      requests: { cache: { read: number; written: number; uncached: number } }[];
    };
    expect(session.baseline).to.contain("Weather: sunny");
    expect(session.requests[0]?.cache).to.deep.include({ read: 30, written: 5, uncached: 12 });
    stop();
    expect(await running).to.equal(0);
    expect(err).to.deep.equal([]);
  });

  it("bad arguments are usage errors naming them", () => {
    expect(() => parseProxyArgs(["--port", "x"], dir)).to.throw(/--port x: a port is a number/);
    expect(() => parseProxyArgs(["--store", "mysql://x"], dir)).to.throw(/--store mysql:\/\/x: a postgres:\/\/ URL/);
    expect(() => parseProxyArgs(["--bogus"], dir)).to.throw(/unknown argument "--bogus"/);
    expect(() => parseProxyArgs(["--openai-upstream", "ftp://x"], dir)).to.throw(/an http\(s\) URL/);
  });

  it("listening beyond loopback without a token exits 64 and says why", async () => {
    const err: string[] = [];
    const code = await main(["proxy", "--port", "0", "--host", "0.0.0.0"], { cwd: dir, out: () => {}, err: (t) => err.push(t) });
    expect(code).to.equal(64);
    expect(err.join("\n")).to.match(/needs a token/);
  });
});

async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 1000 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 20));
  expect(condition()).to.equal(true);
}
