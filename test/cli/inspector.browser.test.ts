// The inspector in a real browser: Debian's headless Chromium opens the page of a real
// host, shows its Baseline and snapshot, and follows a plugin edit and a boundary without
// reloading; the screenshot it takes is kept as a CI artifact (artifacts/inspector.png).
//
// Chromium is driven over the DevTools protocol on a pipe (`--remote-debugging-pipe`),
// by the small driver at the end of this file: no WebSocket client and no browser
// download are needed (decision 081). Its methods mirror puppeteer-core's, so the test
// reads the same if the driver is replaced by that library.

import { type ChildProcess, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Readable, Writable } from "node:stream";
import { expect } from "chai";
import { useInspected, weatherPlugin } from "./inspector.fixture.ts";

const chromiumPath = process.env.CHROMIUM ?? "/usr/bin/chromium";

const forecastValue = {
  days: ["Mon", "Tue", "Wed", "Thu"].map((day, i) => ({ day, sky: i % 2 === 0 ? "clear" : "rain", celsius: 10 + i })),
};
/** A plugin whose value is too long for one line of the snapshot table. */
const forecastPlugin = `import { definePlugin } from "context-host";
import Type from "typebox";
export default definePlugin({ name: "forecast", setup(api) {
  api.source({ key: "forecast/week", schema: Type.Unknown(), load: () => (${JSON.stringify(forecastValue)}),
    baseline: (v) => "Forecast: " + JSON.stringify(v), update: (_p, v) => "Forecast now: " + JSON.stringify(v) });
} });
`;
const artifacts = path.resolve(import.meta.dirname, "../../artifacts");

describe("inspector: in headless Chromium", function () {
  this.timeout(15_000);
  const { start } = useInspected();
  let browser: Browser | undefined;

  before(() => {
    if (!fs.existsSync(chromiumPath))
      throw new Error(
        `the browser test needs Chromium at ${chromiumPath}: apt-get install -y chromium (.ci/run does), or set CHROMIUM`,
      );
  });
  afterEach(async () => {
    await browser?.close();
    browser = undefined;
  });

  it("shows the Baseline and snapshot, then a plugin reload and a new boundary without reloading the page", async () => {
    const { host, inspector, pluginFile, activated } = await start({
      weather: "sunny <b>and</b> warm",
      builtins: true,
      plugins: { "forecast.ts": forecastPlugin },
    });
    const id = await host.createSession({ location: os.tmpdir(), provider: "scripted", model: "echo" });
    await host.prompt(id, "What is the weather like? <em>Warm</em>?");
    await host.step(id);

    browser = await launch(chromiumPath);
    const page = await browser.newPage({ width: 1280, height: 900 });
    await page.goto(inspector.url);
    await page.waitForFunction(`document.querySelector('#snapshot tr[data-key="weather/today"]') !== null`);
    await page.evaluate("window.loadedOnce = true");

    // Plugin text is text: the markup in the value is shown, never parsed.
    expect(await page.evaluate(`document.getElementById("baseline").textContent`)).to.contain(
      "Weather today: sunny <b>and</b> warm",
    );
    expect(
      await page.evaluate(`document.querySelector('#snapshot tr[data-key="weather/today"] td:nth-child(2)').textContent`),
    ).to.equal(JSON.stringify("sunny <b>and</b> warm"));
    expect(await page.evaluate(`document.querySelectorAll("main b, main em").length`)).to.equal(0);
    // Once the first data is in, the session list is the sessions, not a loading note.
    expect(await page.evaluate(`document.getElementById("no-sessions").dataset.state`)).to.equal("loaded");
    expect(await page.evaluate(`document.getElementById("no-sessions").hidden`)).to.equal(true);
    // A long value is folded: a one-line preview, opened as indented JSON.
    const forecast = `document.querySelector('#snapshot tr[data-key="forecast/week"] td:nth-child(2) details')`;
    expect(await page.evaluate(`${forecast}.open`)).to.equal(false);
    expect(await page.evaluate(`${forecast}.querySelector("summary").textContent`)).to.match(/^\{"days":\[\{"day":"Mon".*…$/);
    await page.evaluate(`${forecast}.querySelector("summary").click()`);
    expect(await page.evaluate(`${forecast}.open`)).to.equal(true);
    expect(await page.evaluate(`${forecast}.querySelector("pre").textContent`)).to.equal(JSON.stringify(forecastValue, null, 2));
    expect(await page.evaluate(`document.querySelector('#timeline li[data-seq="1"] pre').textContent`)).to.equal(
      "What is the weather like? <em>Warm</em>?",
    );
    expect(
      await page.evaluate(
        `[...document.querySelectorAll("#epochs tbody tr")].map((tr) => [tr.cells[0].textContent, tr.cells[1].textContent])`,
      ),
    ).to.deep.equal([["1", "initial"]]);
    expect(await page.evaluate(`document.querySelectorAll("#requests li").length`)).to.equal(1);

    fs.writeFileSync(pluginFile, weatherPlugin("rainy"));
    await activated(2);
    await page.waitForFunction(`document.querySelector('#plugins tr[data-plugin="weather"][data-generation="2"]') !== null`);

    await host.prompt(id, "And now?");
    await host.step(id);
    await page.waitForFunction(
      `[...document.querySelectorAll("#timeline li.system-update")].some((li) => li.textContent.includes("Weather is now rainy"))` +
        ` && document.querySelector('#snapshot tr[data-key="weather/today"] td:nth-child(2)').textContent === '"rainy"'` +
        ` && document.querySelectorAll("#requests li").length === 2`,
    );
    expect(await page.evaluate("window.loadedOnce")).to.equal(true);
    expect(await page.evaluate(`document.querySelector('#requests li[data-request="2"]').dataset.prefix`)).to.equal("extends");
    expect(
      Number(await page.evaluate(`document.querySelector('#requests li[data-request="2"] rect.reused').getAttribute("width")`)),
    ).to.be.greaterThan(0);
    // The Mid-Conversation System Message is folded until opened.
    expect(await page.evaluate(`document.querySelector("#timeline li.system-update details").open`)).to.equal(false);
    await page.evaluate(`document.querySelector("#timeline li.system-update summary").click()`);
    expect(await page.evaluate(`document.querySelector("#timeline li.system-update details").open`)).to.equal(true);
    expect(await page.evaluate(`document.getElementById("status").dataset.state`)).to.equal("live");

    fs.mkdirSync(artifacts, { recursive: true });
    const file = path.join(artifacts, "inspector.png");
    await page.screenshot({ path: file });
    const png = fs.readFileSync(file);
    expect(png.subarray(1, 4).toString("latin1")).to.equal("PNG");
    expect(png.length).to.be.greaterThan(20_000);
    // The page ran its own script and style only, without an error or a blocked resource.
    expect(page.problems).to.deep.equal([]);
  });
});

// ---- A small DevTools-protocol driver over Chromium's pipe transport ----

interface Message {
  readonly id?: number;
  readonly method?: string;
  readonly sessionId?: string;
  readonly params?: Record<string, unknown>;
  readonly result?: Record<string, unknown>;
  readonly error?: { readonly message: string };
}

interface Browser {
  newPage(viewport: { width: number; height: number }): Promise<Page>;
  close(): Promise<void>;
}

interface Page {
  goto(url: string): Promise<void>;
  /** Resolves once `expression` is true, checked at each change of the DOM; fails after `timeoutMs`. */
  waitForFunction(expression: string, options?: { timeout?: number }): Promise<void>;
  evaluate(expression: string): Promise<unknown>;
  screenshot(options: { path: string }): Promise<void>;
  /** Uncaught exceptions, console errors and blocked resources of the page so far. */
  readonly problems: string[];
}

async function launch(executable: string): Promise<Browser> {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), "context-host-chromium-"));
  const child: ChildProcess = spawn(
    executable,
    [
      "--headless=new",
      "--no-sandbox",
      "--remote-debugging-pipe",
      `--user-data-dir=${profile}`,
      "--no-first-run",
      "--no-default-browser-check",
      "--disable-gpu",
      "--disable-dev-shm-usage",
      "--disable-extensions",
      "--hide-scrollbars",
      "about:blank",
    ],
    { stdio: ["ignore", "ignore", "pipe", "pipe", "pipe"] },
  );
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const input = child.stdio[3] as Writable;
  const output = child.stdio[4] as Readable;
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-2000);
  });

  let nextId = 0;
  const pending = new Map<number, { resolve: (result: Record<string, unknown>) => void; reject: (error: Error) => void }>();
  const listeners = new Set<(message: Message) => void>();
  let buffer = "";
  output.setEncoding("utf8");
  output.on("data", (chunk: string) => {
    buffer += chunk;
    let end = buffer.indexOf("\0");
    while (end >= 0) {
      const message = JSON.parse(buffer.slice(0, end)) as Message;
      buffer = buffer.slice(end + 1);
      if (message.id !== undefined) {
        const waiter = pending.get(message.id);
        pending.delete(message.id);
        if (message.error !== undefined) waiter?.reject(new Error(`DevTools: ${message.error.message}`));
        else waiter?.resolve(message.result ?? {});
      } else for (const listener of listeners) listener(message);
      end = buffer.indexOf("\0");
    }
  });
  void exited.then(() => {
    for (const waiter of pending.values()) waiter.reject(new Error(`Chromium exited: ${stderr}`));
    pending.clear();
  });

  const send = (method: string, params: Record<string, unknown> = {}, sessionId?: string) =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      const id = ++nextId;
      pending.set(id, { resolve, reject });
      input.write(`${JSON.stringify({ id, method, params, ...(sessionId === undefined ? {} : { sessionId }) })}\0`);
    });

  return {
    async newPage(viewport) {
      const { targetId } = await send("Target.createTarget", { url: "about:blank" });
      const { sessionId } = (await send("Target.attachToTarget", { targetId, flatten: true })) as { sessionId: string };
      const call = (method: string, params?: Record<string, unknown>) => send(method, params, sessionId);
      const problems: string[] = [];
      listeners.add((message) => {
        if (message.sessionId !== sessionId) return;
        const params = message.params ?? {};
        if (message.method === "Runtime.exceptionThrown") problems.push(`exception: ${JSON.stringify(params.exceptionDetails)}`);
        if (message.method === "Runtime.consoleAPICalled" && params.type === "error")
          problems.push(`console: ${JSON.stringify(params.args)}`);
        if (message.method === "Log.entryAdded") {
          const entry = params.entry as { level: string; text: string; url?: string };
          if (entry.level === "error") problems.push(`log: ${entry.text} ${entry.url ?? ""}`);
        }
      });
      await Promise.all([call("Page.enable"), call("Runtime.enable"), call("Log.enable")]);
      await call("Emulation.setDeviceMetricsOverride", { ...viewport, deviceScaleFactor: 1, mobile: false });

      const evaluate = async (expression: string, awaitPromise = false) => {
        const reply = (await call("Runtime.evaluate", { expression, awaitPromise, returnByValue: true })) as {
          result: { value?: unknown };
          exceptionDetails?: { exception?: { description?: string }; text: string };
        };
        if (reply.exceptionDetails !== undefined)
          throw new Error(`in the page: ${reply.exceptionDetails.exception?.description ?? reply.exceptionDetails.text}`);
        return reply.result.value;
      };

      return {
        problems,
        async goto(url) {
          const loaded = new Promise<void>((resolve) => {
            const onLoad = (message: Message) => {
              if (message.sessionId === sessionId && message.method === "Page.loadEventFired") {
                listeners.delete(onLoad);
                resolve();
              }
            };
            listeners.add(onLoad);
          });
          await call("Page.navigate", { url });
          await loaded;
        },
        async waitForFunction(expression, options) {
          const timeout = options?.timeout ?? 4000;
          // A MutationObserver in the page re-checks at each DOM change: the wait needs no polling.
          await evaluate(
            `new Promise((resolve, reject) => {
              const holds = () => { try { return Boolean(${expression}); } catch { return false; } };
              if (holds()) return resolve(true);
              const observer = new MutationObserver(() => { if (holds()) { observer.disconnect(); clearTimeout(timer); resolve(true); } });
              const timer = setTimeout(() => { observer.disconnect(); reject(new Error("timed out after ${timeout} ms waiting for " + ${JSON.stringify(JSON.stringify(expression))})); }, ${timeout});
              observer.observe(document, { subtree: true, childList: true, characterData: true, attributes: true });
            })`,
            true,
          );
        },
        evaluate: (expression) => evaluate(expression),
        async screenshot(options) {
          const { data } = (await call("Page.captureScreenshot", { format: "png" })) as { data: string };
          fs.writeFileSync(options.path, Buffer.from(data, "base64"));
        },
      };
    },
    async close() {
      await send("Browser.close").catch(() => {});
      const timer = setTimeout(() => child.kill("SIGKILL"), 2000);
      await exited;
      clearTimeout(timer);
      fs.rmSync(profile, { recursive: true, force: true });
    },
  };
}
