// The inspector's server over a real host: the page ships with its script and style and
// nothing from elsewhere, the JSON views show a real session (epochs, Baseline, timeline,
// snapshot, requests) and the plugins, and `/events` tells of a plugin reload and of each
// boundary as it happens. Plain fetch; the browser test is inspector.browser.test.ts.

import fs from "node:fs";
import http from "node:http";
import { expect } from "chai";
import {
  InspectorPortUnavailable,
  type PluginView,
  type SessionSummary,
  type SessionView,
  startInspector,
} from "../../scripts/cli/inspector/index.ts";
import { getJson, readEvents, useInspected, weatherPlugin } from "./inspector.fixture.ts";

const isoTime = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

describe("inspector: the server", () => {
  const { start } = useInspected();

  it("serves the page, its script and its stylesheet, all from itself and under a strict content policy", async () => {
    const { inspector } = await start({ weather: "sunny" });
    expect(inspector.url).to.match(/^http:\/\/127\.0\.0\.1:\d+\/$/);
    const page = await fetch(inspector.url);
    expect(page.status).to.equal(200);
    expect(page.headers.get("content-type")).to.equal("text/html; charset=utf-8");
    expect(page.headers.get("content-security-policy")).to.contain("default-src 'none'").and.contain("script-src 'self'");
    const html = await page.text();
    expect(html).to.contain('<script src="/inspector.js" defer></script>').and.contain('href="/inspector.css"');
    // Before its first data arrives the page says it is loading, not that there is no session.
    expect(html).to.contain('<p id="no-sessions" class="muted" data-state="loading">Loading…</p>');
    expect(html).not.to.contain("No session yet");
    for (const [asset, type] of [
      ["/inspector.js", "text/javascript; charset=utf-8"],
      ["/inspector.css", "text/css; charset=utf-8"],
    ] as const) {
      const response = await fetch(new URL(asset, inspector.url));
      expect(response.status, asset).to.equal(200);
      expect(response.headers.get("content-type"), asset).to.equal(type);
      // Nothing is fetched from elsewhere (the SVG namespace is a name, not a fetch), and data
      // never goes through the HTML parser.
      const body = (await response.text()).replace('"http://www.w3.org/2000/svg"', "");
      expect(body, asset).not.to.match(/https?:\/\/|innerHTML|outerHTML|insertAdjacentHTML|document\.write/);
      expect(body.length, asset).to.be.greaterThan(1000);
    }
    expect(html).not.to.match(/https?:\/\//);
    expect((await fetch(new URL("/nothing-here", inspector.url))).status).to.equal(404);
    expect((await fetch(inspector.url, { method: "POST" })).status).to.equal(405);
  });

  it("the JSON views show a real host's session: its epoch, Baseline, timeline, snapshot and first request", async () => {
    const { host, inspector } = await start({ weather: "sunny" });
    const id = await host.createSession({ location: process.cwd(), provider: "scripted", model: "echo" });
    await host.prompt(id, "hello");
    await host.step(id);

    const state = await getJson<{ sessions: SessionSummary[]; plugins: PluginView[]; problems: unknown[] }>(
      inspector,
      "/api/state",
    );
    expect(state.body.sessions).to.deep.equal([
      { id, provider: "scripted", model: "echo", location: process.cwd(), epoch: 1, messageCount: 2 },
    ]);
    expect(state.body.problems).to.deep.equal([]);
    expect(state.body.plugins.map((p) => [p.name, p.generation, p.keys, p.reloads.length])).to.deep.equal([
      ["weather", 1, ["weather/today"], 1],
    ]);

    const { status, body: view } = await getJson<SessionView>(inspector, `/api/sessions/${encodeURIComponent(id)}`);
    expect(status).to.equal(200);
    expect(view.baseline).to.equal("Weather today: sunny");
    expect(view.epochs.map((e) => [e.number, e.reason, e.baseline])).to.deep.equal([[1, "initial", "Weather today: sunny"]]);
    expect(view.epochs[0]?.at).to.match(isoTime);
    expect(view.messages.map((m) => [m.seq, m.role, m.text, m.isSystemUpdate])).to.deep.equal([
      [1, "user", "hello", false],
      [2, "assistant", "reply 1: hello", false],
    ]);
    expect(view.snapshot.map((row) => [row.key, row.value])).to.deep.equal([["weather/today", "sunny"]]);
    expect(view.snapshot[0]?.admittedAt).to.match(isoTime);
    expect(view.requests).to.have.length(1);
    const [first] = view.requests;
    expect(first).to.include({ index: 1, provider: "scripted", model: "echo", epoch: 1, reusedBytes: 0, prefix: "first" });
    expect(first?.bytes).to.equal(first?.newBytes);
    // The system prompt, the Baseline and the user message, as UTF-8.
    expect(first?.bytes).to.equal(
      Buffer.byteLength("You are a test agent.") +
        Buffer.byteLength("Weather today: sunny") +
        Buffer.byteLength(JSON.stringify({ role: "user", text: "hello" })),
    );

    expect((await getJson(inspector, "/api/sessions/no-such-session")).status).to.equal(404);
    expect((await getJson(inspector, "/api/sessions/%E0%A4%A")).status).to.equal(400);
  });

  it("/events tells of a plugin reload when its file is edited, and of the boundary that admits the new value", async () => {
    const { host, inspector, pluginFile, activated } = await start({ weather: "sunny" });
    const id = await host.createSession({ location: process.cwd(), provider: "scripted", model: "echo" });
    await host.prompt(id, "hello");
    await host.step(id);
    const before = (await getJson<SessionView>(inspector, `/api/sessions/${id}`)).body;
    const events = await readEvents(inspector.url);
    try {
      fs.writeFileSync(pluginFile, weatherPlugin("rainy"));
      await events.next((e) => e.kind === "plugin" && e.plugin === "weather", "plugin reload");
      await activated(2);
      const plugins = (await getJson<{ plugins: PluginView[] }>(inspector, "/api/state")).body.plugins;
      expect(plugins.map((p) => [p.name, p.generation, p.reloads.map((r) => r.generation)])).to.deep.equal([
        ["weather", 2, [1, 2]],
      ]);
      expect(plugins[0]?.reloads[1]?.at).to.match(isoTime);
      expect(plugins[0]?.files).to.deep.equal([pluginFile]);
      // Where it came from: its folder (absolute, outside the working folder).
      expect(plugins[0]?.origin).to.equal(pluginFile.slice(0, pluginFile.lastIndexOf("/")));

      await host.prompt(id, "and now?");
      const stepped = host.step(id);
      await events.next((e) => e.kind === "boundary" && e.session === id, "boundary");
      await stepped;
      await events.next((e) => e.kind === "boundary" && e.session === id, "reply committed");
    } finally {
      events.close();
    }

    const view = (await getJson<SessionView>(inspector, `/api/sessions/${id}`)).body;
    expect(view.messages.map((m) => [m.role, m.text, m.isSystemUpdate])).to.deep.equal([
      ["user", "hello", false],
      ["assistant", "reply 1: hello", false],
      ["user", "and now?", false],
      ["system-update", "Weather is now rainy", true],
      ["assistant", "reply 2: and now?", false],
    ]);
    // The Baseline stays the epoch's; the snapshot advanced, admitted later than the first value.
    expect(view.baseline).to.equal("Weather today: sunny");
    expect(view.snapshot.map((row) => [row.key, row.value])).to.deep.equal([["weather/today", "rainy"]]);
    expect(Date.parse(view.snapshot[0]?.admittedAt as string)).to.be.at.least(
      Date.parse(before.snapshot[0]?.admittedAt as string),
    );
    // The second request repeats all of the first, and adds the rest.
    const [first, second] = view.requests;
    expect(second).to.include({ index: 2, prefix: "extends", reusedBytes: first?.bytes });
    expect(second?.newBytes).to.equal((second?.bytes ?? 0) - (first?.bytes ?? 0));
    expect(second?.newBytes).to.be.greaterThan(0);
  });

  it("a move starts a new epoch: both epochs with their reasons and Baselines, and a request that begins it", async () => {
    const { host, inspector, folder } = await start({ weather: "sunny", builtins: true });
    const id = await host.createSession({ location: process.cwd(), provider: "scripted", model: "echo" });
    await host.prompt(id, "hello");
    await host.step(id);
    const events = await readEvents(inspector.url);
    try {
      await host.move(id, folder);
      await events.next((e) => e.kind === "boundary" && e.session === id, "the move");
    } finally {
      events.close();
    }
    await host.prompt(id, "moved");
    await host.step(id);

    const view = (await getJson<SessionView>(inspector, `/api/sessions/${id}`)).body;
    expect(view.location).to.equal(folder);
    expect(view.epochs.map((e) => [e.number, e.reason])).to.deep.equal([
      [1, "initial"],
      [2, "move"],
    ]);
    const [before, after] = view.epochs.map((e) => e.baseline ?? "");
    expect(before).to.contain(`Working directory: ${process.cwd()}`).and.contain("Weather today: sunny");
    expect(after).to.contain(`Working directory: ${folder}`).and.contain("Weather today: sunny");
    expect(view.baseline).to.equal(after);
    expect(view.epochs.map((e) => e.at)).to.satisfy((times: string[]) => times.every((t) => isoTime.test(t)));
    expect(view.messages.map((m) => [m.epoch, m.role])).to.deep.equal([
      [1, "user"],
      [1, "assistant"],
      [2, "user"],
      [2, "assistant"],
    ]);
    const second = view.requests[1];
    expect(second).to.include({ epoch: 2, prefix: "new-epoch", reason: "move" });
    // The system prompt and the Baseline up to the working directory are sent as before.
    let common = 0;
    while (common < (before as string).length && before?.[common] === after?.[common]) common++;
    expect(second?.reusedBytes).to.equal(
      Buffer.byteLength("You are a test agent.") + Buffer.byteLength((after as string).slice(0, common)),
    );
  });

  it("a problem in the plugin is announced and shown as current, and is gone once the plugin loads again", async () => {
    const { inspector, pluginFile, activated } = await start({ weather: "sunny" });
    const events = await readEvents(inspector.url);
    try {
      fs.writeFileSync(pluginFile, "export default definePlugin({ name: 'weather', setup( })\n");
      await events.next((e) => e.kind === "problem", "problem");
      const broken = (
        await getJson<{ plugins: PluginView[]; problems: Array<{ plugin: string; phase: string }> }>(inspector, "/api/state")
      ).body;
      expect(broken.problems.map((p) => [p.plugin, p.phase])).to.deep.equal([["weather", "bundle"]]);
      // The last good generation stays active, with its problem beside it.
      expect(broken.plugins.map((p) => [p.name, p.generation, p.problems.length])).to.deep.equal([["weather", 1, 1]]);

      fs.writeFileSync(pluginFile, weatherPlugin("fixed"));
      await activated(2);
      await events.next((e) => e.kind === "plugin", "reload after the fix");
    } finally {
      events.close();
    }
    const fixed = (await getJson<{ problems: unknown[] }>(inspector, "/api/state")).body;
    expect(fixed.problems).to.deep.equal([]);
  });

  it("answers only on 127.0.0.1 and only to requests that name it (no DNS rebinding)", async () => {
    const { inspector } = await start({ weather: "sunny" });
    const { port } = new URL(inspector.url);
    const status = (host: string) =>
      new Promise<number>((resolve, reject) => {
        http
          .get({ host: "127.0.0.1", port, path: "/api/state", headers: { host } }, (response) => {
            response.resume();
            resolve(response.statusCode ?? 0);
          })
          .on("error", reject);
      });
    expect(await status(`127.0.0.1:${port}`)).to.equal(200);
    expect(await status(`localhost:${port}`)).to.equal(200);
    expect(await status(`attacker.example:${port}`)).to.equal(421);
  });

  it("a port in use is a named error, and close ends open event streams", async () => {
    const { inspector, source } = await start({ weather: "sunny" });
    const port = Number(new URL(inspector.url).port);
    let error: unknown;
    await startInspector({ source, port }).catch((e: unknown) => {
      error = e;
    });
    expect(error).to.be.instanceOf(InspectorPortUnavailable);
    expect((error as Error).message).to.equal(`inspector: cannot listen on 127.0.0.1:${port}: the port is in use`);

    const response = await fetch(new URL("/events", inspector.url));
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    await reader.read();
    await inspector.close();
    expect((await reader.read()).done).to.equal(true);
  });
});
