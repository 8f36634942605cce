// The inspector in a real browser: Debian's headless Chromium, driven by playwright-core
// (decision 103; its own browser download is never used: `executablePath` is the system's),
// opens the page of a real host and is used as a person would: it sees the Baseline and the
// snapshot, opens a folded value and a Mid-Conversation System Message by clicking them, and
// sees a plugin edit and a boundary arrive without reloading. The screenshot it takes is kept
// as a CI artifact (artifacts/inspector.png).

import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { expect } from "chai";
import { type Browser, chromium, type Page } from "playwright-core";
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
  /** What the test was doing, and the plugin events it saw: printed when it fails (a timeout names no step). */
  let step = "";
  const seen: string[] = [];

  before(() => {
    if (!fs.existsSync(chromiumPath))
      throw new Error(
        `the browser test needs Chromium at ${chromiumPath}: apt-get install -y chromium (.ci/run does), or set CHROMIUM`,
      );
  });
  afterEach(async function () {
    if (this.currentTest?.state === "failed")
      console.error(`inspector browser test failed while it ${step}; plugin events:\n  ${seen.join("\n  ")}`);
    step = "";
    seen.length = 0;
    await browser?.close();
    browser = undefined;
  });

  it("shows the Baseline and snapshot, then a plugin reload and a new boundary without reloading the page", async () => {
    step = "started the host";
    const { host, inspector, pluginFile, activated } = await start({
      weather: "sunny <b>and</b> warm",
      builtins: true,
      plugins: { "forecast.ts": forecastPlugin },
    });
    host.onPluginEvent((event) => seen.push(JSON.stringify(event)));
    step = "stepped the first boundary";
    const id = await host.createSession({ location: os.tmpdir(), provider: "scripted", model: "echo" });
    await host.prompt(id, "What is the weather like? <em>Warm</em>?");
    await host.step(id);

    step = "launched Chromium";
    browser = await launch(chromiumPath);
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const problems = watchProblems(page);
    step = "opened the page and waited for the first snapshot";
    await page.goto(inspector.url);
    await waitFor(page, `document.querySelector('#snapshot tr[data-key="weather/today"]') !== null`);
    await page.evaluate("window.loadedOnce = true");
    step = "read the first page";

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
    await page.click('#snapshot tr[data-key="forecast/week"] td:nth-child(2) details summary');
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

    step = "waited for the weather plugin's generation 2";
    fs.writeFileSync(pluginFile, weatherPlugin("rainy"));
    await activated(2);
    step = "waited for the page to show a generation after the edit";
    // Whichever generation the edit made (the numbering is the host's), 2 or later.
    await waitFor(page, `Number(document.querySelector('#plugins tr[data-plugin="weather"]')?.dataset.generation) >= 2`);

    step = "stepped the second boundary and waited for the page to show it";
    await host.prompt(id, "And now?");
    await host.step(id);
    await waitFor(
      page,
      `[...document.querySelectorAll("#timeline li.system-update")].some((li) => li.textContent.includes("Weather is now rainy"))` +
        ` && document.querySelector('#snapshot tr[data-key="weather/today"] td:nth-child(2)').textContent === '"rainy"'` +
        ` && document.querySelectorAll("#requests li").length === 2`,
    );
    step = "read the second page";
    expect(await page.evaluate("window.loadedOnce")).to.equal(true);
    expect(await page.evaluate(`document.querySelector('#requests li[data-request="2"]').dataset.prefix`)).to.equal("extends");
    expect(
      Number(await page.evaluate(`document.querySelector('#requests li[data-request="2"] rect.reused').getAttribute("width")`)),
    ).to.be.greaterThan(0);
    // The Mid-Conversation System Message is folded until opened.
    expect(await page.evaluate(`document.querySelector("#timeline li.system-update details").open`)).to.equal(false);
    await page.click("#timeline li.system-update summary");
    expect(await page.evaluate(`document.querySelector("#timeline li.system-update details").open`)).to.equal(true);
    expect(await page.evaluate(`document.getElementById("status").dataset.state`)).to.equal("live");

    step = "took the screenshot";
    fs.mkdirSync(artifacts, { recursive: true });
    const file = path.join(artifacts, "inspector.png");
    await page.screenshot({ path: file });
    const png = fs.readFileSync(file);
    expect(png.subarray(1, 4).toString("latin1")).to.equal("PNG");
    expect(png.length).to.be.greaterThan(20_000);
    // The page ran its own script and style only, without an error or a blocked resource.
    expect(problems).to.deep.equal([]);
  });
});

/**
 * Resolves once `expression` is true in the page, asked again every 20 ms (mocha's timeout
 * bounds the wait). Not `page.waitForFunction`: it evaluates with `eval` inside the page,
 * which the inspector's content policy rightly refuses.
 */
async function waitFor(page: Page, expression: string): Promise<void> {
  while ((await page.evaluate(expression)) !== true) await new Promise((resolve) => setTimeout(resolve, 20));
}

/** Starts the system's Chromium headless, with the flags this machine's closed network wants. */
function launch(executablePath: string): Promise<Browser> {
  return chromium.launch({
    executablePath,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--disable-dev-shm-usage",
      "--hide-scrollbars",
    ],
  });
}

/** Uncaught exceptions, console errors (a blocked resource is one) and failed requests of the page, as they happen. */
function watchProblems(page: Page): string[] {
  const problems: string[] = [];
  page.on("pageerror", (error) => problems.push(`uncaught: ${error.message}`));
  page.on("console", (message) => {
    if (message.type() === "error") problems.push(`console: ${message.text()}`);
  });
  page.on("requestfailed", (request) => {
    // The event stream is cut when the test ends; anything else failing is a problem.
    if (!request.url().endsWith("/events"))
      problems.push(`request failed: ${request.url()} ${request.failure()?.errorText ?? ""}`);
  });
  return problems;
}
