// The `core/date` Context Source through a real host: the host-local calendar date by
// default, a configured IANA time zone instead, and one Mid-Conversation System Message
// only when the calendar date changes in that zone. Settings errors name the setting.

import { expect } from "chai";
import { SettingInvalid } from "../../core/base/errors.ts";
import { checkSettings } from "../../core/host/settings.ts";
import { type Host, scriptedProvider } from "../../core/index.ts";
import { calendarDate } from "../../core/sources/date.ts";
import { baselineOf, openHost, requestOf, systemUpdates, type TestHostOptions, tempFolder } from "../instructions/harness.ts";

/** 2024-01-15 10:59 UTC: 23:59 on 15 January in Auckland (NZDT, UTC+13), 02:59 in Los Angeles. */
const beforeAucklandMidnight = Date.UTC(2024, 0, 15, 10, 59);
/** Two minutes later: 00:01 on 16 January in Auckland, still 15 January in UTC. */
const afterAucklandMidnight = Date.UTC(2024, 0, 15, 11, 1);

describe("built-in source core/date", () => {
  let data: ReturnType<typeof tempFolder>;
  let project: ReturnType<typeof tempFolder>;
  const hosts: Host[] = [];
  const originalTz = process.env.TZ;

  beforeEach(() => {
    data = tempFolder("date-data");
    project = tempFolder("date-project");
  });

  afterEach(async () => {
    for (const host of hosts.splice(0)) await host.close();
    if (originalTz === undefined) delete process.env.TZ;
    else process.env.TZ = originalTz;
    data.remove();
    project.remove();
  });

  async function start(options: Omit<TestHostOptions, "providers">) {
    const provider = scriptedProvider();
    const host = await openHost(data.path, { providers: { scripted: provider }, ...options });
    hosts.push(host);
    const id = await host.createSession({ location: project.path, provider: "scripted", model: "m" });
    return { host, id, provider };
  }

  it("without a configured time zone the date is the host-local calendar date", async () => {
    // Node follows changes of process.env.TZ: the host's own zone decides the date.
    process.env.TZ = "Pacific/Auckland";
    const auckland = await start({ clock: { now: () => afterAucklandMidnight } });
    await auckland.host.prompt(auckland.id, "hello");
    expect(baselineOf(requestOf(await auckland.host.step(auckland.id)))).to.contain("Today's date is 2024-01-16.");

    process.env.TZ = "America/Los_Angeles";
    const local = new Date(afterAucklandMidnight);
    const expected = `${local.getFullYear()}-${String(local.getMonth() + 1).padStart(2, "0")}-${String(local.getDate()).padStart(2, "0")}`;
    expect(expected).to.equal("2024-01-15");
    const losAngeles = await start({ clock: { now: () => afterAucklandMidnight } });
    await losAngeles.host.prompt(losAngeles.id, "hello");
    const baseline = baselineOf(requestOf(await losAngeles.host.step(losAngeles.id)));
    expect(baseline.split("\n\n")[0]).to.equal(`Today's date is ${expected}.`);
  });

  it("a configured time zone replaces the host-local date and is named in the text", async () => {
    process.env.TZ = "America/Los_Angeles";
    const { host, id } = await start({ clock: { now: () => afterAucklandMidnight }, timeZone: "Pacific/Auckland" });
    await host.prompt(id, "hello");
    const baseline = baselineOf(requestOf(await host.step(id)));
    expect(baseline.split("\n\n")[0]).to.equal("Today's date is 2024-01-16 (Pacific/Auckland).");
  });

  it("a calendar date change across midnight in the configured zone emits exactly one Mid-Conversation System Message with the new date, and a mere change of time emits nothing", async () => {
    let now = Date.UTC(2024, 0, 15, 10, 0); // 23:00 in Auckland
    const { host, id, provider } = await start({ clock: { now: () => now }, timeZone: "Pacific/Auckland" });
    await host.prompt(id, "one");
    expect(baselineOf(requestOf(await host.step(id)))).to.contain("Today's date is 2024-01-15 (Pacific/Auckland).");

    now = beforeAucklandMidnight; // 23:59, same calendar date in Auckland
    await host.prompt(id, "two");
    const sameDay = requestOf(await host.step(id));
    expect(sameDay.messages.map((m) => m.role)).to.not.include("system-update");
    expect(await systemUpdates(host, id)).to.deep.equal([]);

    now = afterAucklandMidnight; // 00:01 the next day in Auckland; the UTC date has not changed
    expect(calendarDate(now, "UTC")).to.equal("2024-01-15");
    await host.prompt(id, "three");
    const nextDay = requestOf(await host.step(id));
    expect(nextDay.messages.at(-2)).to.deep.equal({ role: "user", text: "three" });
    expect(nextDay.messages.at(-1)).to.deep.equal({
      role: "system-update",
      text: "The date is now 2024-01-16 (Pacific/Auckland).",
    });
    expect(await systemUpdates(host, id)).to.deep.equal(["The date is now 2024-01-16 (Pacific/Auckland)."]);

    now = afterAucklandMidnight + 60 * 60 * 1000; // an hour later, same date
    await host.prompt(id, "four");
    requestOf(await host.step(id));
    expect(await systemUpdates(host, id)).to.have.length(1);
    // The Baseline stays byte for byte the first one within the epoch.
    expect(new Set(provider.requests.map((r) => baselineOf(r))).size).to.equal(1);
  });

  it("an unknown time zone is a SettingInvalid naming the zone and the setting timeZone", async () => {
    const error = await createAndCatch({ timeZone: "Mars/Olympus_Mons" });
    expect(error).to.be.instanceOf(SettingInvalid);
    expect((error as SettingInvalid).setting).to.equal("timeZone");
    expect((error as SettingInvalid).message)
      .to.contain("timeZone")
      .and.to.contain('"Mars/Olympus_Mons"');
  });

  it("bad instruction settings are SettingInvalids naming the setting path", async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ maxBytes: 0 }, "instructions.maxBytes"],
      [{ maxBytes: 1.5 }, "instructions.maxBytes"],
      [{ discovery: "no" }, "instructions.discovery"],
      [{ globalFile: true }, "instructions.globalFile"],
      [{ globalFile: "" }, "instructions.globalFile"],
      [{ globalFil: "/tmp/AGENTS.md" }, "instructions.globalFil"],
    ];
    for (const [instructions, setting] of cases) {
      const error = await createAndCatch({ instructions: instructions as TestHostOptions["instructions"] });
      expect(error, JSON.stringify(instructions)).to.be.instanceOf(SettingInvalid);
      expect((error as SettingInvalid).setting, JSON.stringify(instructions)).to.equal(setting);
      expect((error as SettingInvalid).message).to.match(new RegExp(`^setting ${setting.replace(".", "\\.")}: \\S`));
    }
    // An unknown setting says so, rather than a schema detail.
    const unknown = await createAndCatch({ instructions: { globalFil: "/tmp/AGENTS.md" } as TestHostOptions["instructions"] });
    expect((unknown as SettingInvalid).message).to.contain("unknown setting");
    expect(() => checkSettings({ instructions: "off" })).to.throw(SettingInvalid, /^setting instructions: /);
    expect(() => checkSettings({ timeZone: "" })).to.throw(SettingInvalid, /^setting timeZone: /);
  });

  it("every documented instruction setting is accepted, including the tool read limit", () => {
    expect(() =>
      checkSettings({
        timeZone: "Europe/Oslo",
        instructions: { globalFile: false, discovery: false, maxBytes: 1024, maxReadBytes: 4096 },
      }),
    ).to.not.throw();
  });

  /** createHost with bad settings: the error, after which nothing is left open. */
  async function createAndCatch(options: Omit<TestHostOptions, "providers">): Promise<unknown> {
    try {
      hosts.push(await openHost(data.path, { providers: { scripted: scriptedProvider() }, ...options }));
    } catch (error) {
      return error;
    }
    throw new Error(`createHost accepted ${JSON.stringify(options)}`);
  }
});
