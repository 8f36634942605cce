// The dev model: what `dev` knows of its host, for the terminal and the inspector —
// epochs, the timeline with Mid-Conversation System Messages marked, the snapshot with
// when each value was admitted, plugins with reload times, problems, and per request
// the cached-prefix share: each session the one view of session-view.ts.

import { expect } from "chai";
import type { Diagnostic } from "../../core/base/diagnostics.ts";
import type { ProviderRequest } from "../../core/index.ts";
import type { StoredMessage } from "../../core/store.ts";
import { DevModelStore } from "../../scripts/cli/dev/model.ts";
import { prefixShare } from "../../scripts/cli/session-view.ts";

const request = (system: string[], messages: ProviderRequest["messages"], model = "m"): ProviderRequest => ({
  provider: "scripted",
  model,
  system,
  messages,
});
const stored = (seq: number, role: StoredMessage["role"], text: string, epoch = 1): StoredMessage => ({ seq, role, text, epoch });

describe("dev model", () => {
  it("records boundaries: a new epoch, the admitted messages, the snapshot's admission times and the cached-prefix share", () => {
    let now = 1000;
    const model = new DevModelStore({ now: () => now });
    const events: string[] = [];
    model.on("session", ({ session }) => events.push(`session ${session.id}`));
    model.on("boundary", ({ epochStarted, admitted, request }) =>
      events.push(`boundary ${epochStarted?.number ?? "-"} ${admitted.map((m) => m.role).join(",")} ${request.reusedBytes}`),
    );
    model.putSession({ id: "s", location: "/p", provider: "scripted", model: "m" });

    const first = request(["sys", "base"], [{ role: "user", text: "one" }]);
    const epoch1 = {
      number: 1,
      reason: "initial" as const,
      baseline: "base",
      snapshot: { "a/x": { value: 1 }, "a/y": { value: "y" } },
    };
    const one = model.recordBoundary("s", { request: first, epoch: epoch1, admitted: [stored(1, "user", "one")] });
    expect(one.epochStarted).to.deep.equal({ number: 1, reason: "initial", at: "1970-01-01T00:00:01.000Z", baseline: "base" });
    expect(one.request).to.deep.include({ index: 1, epoch: 1, reusedBytes: 0, prefix: "first" });
    expect(one.request.newBytes).to.equal(prefixShare(undefined, first).bytes);
    model.appendMessages("s", [stored(2, "assistant", "reply 1")]);

    now = 2000;
    const second = request(
      ["sys", "base"],
      [
        { role: "user", text: "one" },
        { role: "assistant", text: "reply 1" },
        { role: "user", text: "two" },
        { role: "system-update", text: "x is now 2" },
      ],
    );
    const epoch1b = { ...epoch1, snapshot: { "a/x": { value: 2 }, "a/y": { value: "y" } } };
    const two = model.recordBoundary("s", {
      request: second,
      epoch: epoch1b,
      admitted: [stored(3, "user", "two"), stored(4, "system-update", "x is now 2")],
    });
    expect(two.epochStarted).to.equal(undefined);
    // The second request extends the first: every byte of the first is reused.
    const shared = prefixShare(undefined, first).bytes;
    expect(two.request).to.deep.include({
      index: 2,
      prefix: "extends",
      reusedBytes: shared,
      newBytes: prefixShare(undefined, second).bytes - shared,
    });

    const session = model.session("s");
    expect(session?.messages.map((m) => `${m.seq} ${m.role} ${m.isSystemUpdate}`)).to.deep.equal([
      "1 user false",
      "2 assistant false",
      "3 user false",
      "4 system-update true",
    ]);
    expect(session).to.deep.include({ epoch: 1, messageCount: 4, baseline: "base" });
    // a/x changed at 2000; a/y kept its admission time.
    expect(session?.snapshot.map((row) => [row.key, row.value, row.admittedAt])).to.deep.equal([
      ["a/x", 2, "1970-01-01T00:00:02.000Z"],
      ["a/y", "y", "1970-01-01T00:00:01.000Z"],
    ]);

    now = 3000;
    const third = request(["sys", "base2"], [{ role: "user", text: "three" }], "m2");
    const three = model.recordBoundary("s", {
      request: third,
      epoch: { number: 2, reason: "switch", baseline: "base2", snapshot: { "a/y": { value: "y" } } },
      admitted: [stored(5, "user", "three", 2)],
    });
    expect(three.epochStarted?.reason).to.equal("switch");
    // Another model: nothing of the previous request is reused, and the request starts epoch 2.
    expect(three.request).to.deep.include({ epoch: 2, reusedBytes: 0, prefix: "new-epoch", reason: "switch" });
    // A new epoch re-admits every value.
    expect(model.session("s")?.snapshot).to.deep.equal([{ key: "a/y", value: "y", admittedAt: "1970-01-01T00:00:03.000Z" }]);
    expect(model.session("s")?.epochs.map((e) => e.number)).to.deep.equal([1, 2]);
    expect(events).to.deep.equal([
      "session s",
      "boundary 1 user 0",
      `boundary - user,system-update ${shared}`,
      "boundary 2 user 0",
    ]);
    expect(Object.isFrozen(model.session("s"))).to.equal(true);
  });

  it("keeps plugins with their reloads and current problems, and a throwing listener harms no one", () => {
    let now = 10;
    const model = new DevModelStore({ now: () => now });
    const heard: string[] = [];
    model.on("plugin", () => {
      throw new Error("a broken view");
    });
    const off = model.on("plugin", ({ plugin, change }) => heard.push(`${change} ${plugin.name} ${plugin.generation}`));
    model.on("problem", ({ problems }) => heard.push(`problems ${problems.length}`));
    const origin = { kind: "folder", folder: "/p" } as const;
    const info = { name: "w", file: "/p/w.ts", origin, keys: ["w/x"], observed: {} };
    model.recordPlugin("activated", { ...info, generation: 1, loadMs: 12 });
    const problem: Diagnostic = { origin: "plugin", plugin: "w", file: "/p/w.ts", phase: "bundle", message: "bad" };
    model.recordProblem(problem, [problem]);
    expect(model.plugins()[0]?.problems).to.deep.equal([problem]);
    expect(model.problems()).to.deep.equal([problem]);
    now = 20;
    model.syncProblems([]);
    model.recordPlugin("activated", { ...info, generation: 2, loadMs: 7 });
    expect(model.plugins()).to.deep.equal([
      {
        name: "w",
        file: "/p/w.ts",
        origin,
        generation: 2,
        keys: ["w/x"],
        reloads: [
          { generation: 1, at: 10, loadMs: 12 },
          { generation: 2, at: 20, loadMs: 7 },
        ],
        problems: [],
      },
    ]);
    model.recordPlugin("removed", { name: "w", file: "/p/w.ts" });
    expect(model.plugins()).to.deep.equal([]);
    off();
    model.recordPlugin("activated", { ...info, generation: 3, loadMs: 1 });
    expect(heard).to.deep.equal(["activated w 1", "problems 1", "activated w 2", "removed w 2"]);
  });
});
