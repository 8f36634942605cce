// A plugin's life as one state union (`plugin-life.ts`): each transition, as a pure function
// from a state to the next, and the ones a state refuses.

import { expect } from "chai";
import { Scope } from "../../core/base/scope.ts";
import type { PluginBundle } from "../../core/plugins/bundle.ts";
import {
  attempted,
  attemptForgotten,
  type CrashLimits,
  closed,
  deadlinesOf,
  disposed,
  type HostedGeneration,
  isRestartAsked,
  lives,
  liveTransport,
  loadBegan,
  loadEnded,
  numbered,
  overtakenForgotten,
  overtook,
  type PluginLife,
  rebuildBegan,
  restartDue,
  retired,
  setUp,
  startBegan,
  started,
  startFailed,
  stopped,
  swappedIn,
  unstarted,
} from "../../core/plugins/plugin-life.ts";
import type { PluginTransport } from "../../core/plugins/protocol.ts";
import { PluginWorkerStopped } from "../../core/plugins/protocol.ts";

/** A transport that is never asked anything here; `stopped` says whether it stopped. */
function transport(stop?: PluginWorkerStopped): PluginTransport {
  return {
    stopped: stop,
    request: () => Promise.reject(new Error("not asked in these tests")),
    terminate: async () => {},
  };
}

function generation(number: number, hash = `hash ${number}`): HostedGeneration {
  const bundle = { hash } as PluginBundle;
  return {
    name: "weather",
    generation: number,
    scope: new Scope(`generation ${number}`),
    keys: ["weather/today"],
    bundle,
    startedAt: 0,
    readyAt: 0,
    timings: { bundleMs: 0, evaluateMs: 0, setupMs: 0 },
  };
}

const limits: CrashLimits = { crashWindowMs: 60_000, maxCrashes: 3, backoffMs: [0, 250, 1000] };
const ownStop = (at: number) => ({ at, isCollateral: false });
const collateralStop = (at: number) => ({ at, isCollateral: true });

/** A life whose transport runs, with `active` swapped in if given. */
function running(worker: PluginTransport, active?: HostedGeneration): PluginLife {
  const life = started(startBegan(unstarted, Promise.resolve(worker)), worker);
  return active === undefined ? life : swappedIn(life, active);
}

/** `life` after its transport stopped at `at` and a fresh one started. */
function restartedAfter(life: PluginLife, worker: PluginTransport, at: number): PluginLife {
  const afterStop = stopped(life, worker, ownStop(at), limits);
  return started(startBegan(afterStop, Promise.resolve(worker)), worker);
}

/** A plugin whose transport stopped `maxCrashes` times within the window, a generation active. */
function disabledPlugin(worker: PluginTransport): PluginLife {
  const twice = restartedAfter(restartedAfter(running(worker, generation(1)), worker, 1), worker, 2);
  return stopped(twice, worker, ownStop(3), limits);
}

describe("plugin life: the worker", () => {
  it("a plugin just hosted has no transport, no generation and no stop on record", () => {
    expect(unstarted.kind).to.equal("stopped");
    expect(unstarted.generations).to.deep.equal({
      numbered: 0,
      active: undefined,
      overtaken: undefined,
      attemptedHash: undefined,
    });
    expect(unstarted.crashes).to.deep.equal([]);
    expect(unstarted.loads).to.equal(0);
  });

  it("a start makes it starting, and a started transport runs with no generation in it", () => {
    const worker = transport();
    const pending = Promise.resolve(worker);
    const starting = startBegan(unstarted, pending);
    expect(starting).to.include({ kind: "starting", transport: pending });
    const life = started(starting, worker);
    expect(life.kind).to.equal("running");
    expect(life.kind === "running" && life.transport).to.equal(worker);
    expect(lives(life, 1)).to.equal(false);
  });

  it("a start is refused while one starts, while a live transport runs, and once closed", () => {
    const worker = transport();
    const starting = startBegan(unstarted, Promise.resolve(worker));
    expect(() => startBegan(starting, Promise.resolve(worker))).to.throw(/start began.*starting/);
    expect(() => startBegan(running(worker), Promise.resolve(worker))).to.throw(/running/);
    expect(() => startBegan(closed(unstarted), Promise.resolve(worker))).to.throw(/closed/);
  });

  it("a running transport that stopped aside, and a disabled plugin (for a load's retry), may start a fresh one", () => {
    const stoppedAside = transport(new PluginWorkerStopped({ reason: "gone" }));
    expect(startBegan(running(stoppedAside), Promise.resolve(transport())).kind).to.equal("starting");
    const disabled = disabledPlugin(transport());
    expect(disabled.kind).to.equal("disabled");
    expect(startBegan(disabled, Promise.resolve(transport())).kind).to.equal("starting");
  });

  it("started is refused unless a transport is starting", () => {
    expect(() => started(unstarted, transport())).to.throw(/started.*stopped/);
  });

  it("a failed start leaves no transport, so the next request starts one; a closed life stays closed", () => {
    const starting = startBegan(unstarted, new Promise<PluginTransport>(() => {}));
    expect(startFailed(starting).kind).to.equal("stopped");
    const gone = closed(starting);
    expect(startFailed(gone)).to.equal(gone);
    expect(() => startFailed(unstarted)).to.throw(/start failed/);
  });

  it("a stop with no generation active leaves it stopped, with the stop on record", () => {
    const worker = transport();
    const life = stopped(running(worker), worker, ownStop(1000), limits);
    expect(life.kind).to.equal("stopped");
    expect(life.crashes).to.deep.equal([1000]);
  });

  it("a stop with a generation active restarts it after the back-off of its count, the last one repeating", () => {
    const worker = transport();
    let life = running(worker, generation(1));
    const waits: number[] = [];
    for (const at of [1, 2]) {
      life = stopped(life, worker, ownStop(at), limits);
      expect(life.kind).to.equal("restarting");
      if (life.kind === "restarting") waits.push(life.backOffMs);
      life = started(startBegan(life, Promise.resolve(worker)), worker);
    }
    expect(waits).to.deep.equal([0, 250]);
    const longer: CrashLimits = { ...limits, maxCrashes: 5 };
    for (const at of [3, 4]) {
      life = stopped(life, worker, ownStop(at), longer);
      if (life.kind === "restarting") waits.push(life.backOffMs);
      life = started(startBegan(life, Promise.resolve(worker)), worker);
    }
    expect(waits).to.deep.equal([0, 250, 1000, 1000]);
  });

  it("the stops that reach maxCrashes within the window disable the plugin; older ones are forgotten", () => {
    const worker = transport();
    const twice = restartedAfter(restartedAfter(running(worker, generation(1)), worker, 0), worker, 10);
    expect(stopped(twice, worker, ownStop(20), limits).kind).to.equal("disabled");
    const later = stopped(twice, worker, ownStop(60_005), limits);
    expect(later.kind).to.equal("restarting");
    expect(later.crashes).to.deep.equal([10, 60_005]);
  });

  it("a collateral stop (for another plugin of a shared worker) is not counted and restarts at once", () => {
    const worker = transport();
    const life = stopped(running(worker, generation(1)), worker, collateralStop(5), limits);
    expect(life).to.include({ kind: "restarting", backOffMs: 0 });
    expect(life.crashes).to.deep.equal([]);
  });

  it("a stop of a transport not running changes nothing", () => {
    const worker = transport();
    const life = running(worker, generation(1));
    expect(stopped(life, transport(), ownStop(1), limits)).to.equal(life);
    expect(stopped(unstarted, worker, ownStop(1), limits)).to.equal(unstarted);
    const gone = closed(life);
    expect(stopped(gone, worker, ownStop(1), limits)).to.equal(gone);
  });

  it("a generation set up in the running transport lives there until it is disposed", () => {
    const worker = transport();
    const deadlines = new Map([["weather/today", 2000]]);
    const life = setUp(running(worker), worker, 1, deadlines);
    expect(lives(life, 1)).to.equal(true);
    expect(life.kind === "running" && life.living.get(1)).to.equal(deadlines);
    expect(lives(disposed(life, 1), 1)).to.equal(false);
  });

  it("a generation set up in a transport no longer running does not live; a stop forgets every generation", () => {
    const worker = transport();
    const other = transport();
    expect(setUp(running(worker), other, 1, new Map())).to.deep.equal(running(worker));
    const life = setUp(running(worker, generation(1)), worker, 1, new Map());
    expect(lives(stopped(life, worker, ownStop(1), limits), 1)).to.equal(false);
  });

  it("a running transport is live until it stops, even aside; a generation's deadlines are read where it lives", () => {
    const worker = transport();
    const deadlines = new Map([["weather/today", 2000]]);
    const life = setUp(running(worker), worker, 1, deadlines);
    expect(liveTransport(life)).to.equal(worker);
    expect(deadlinesOf(life, 1)).to.equal(deadlines);
    expect(deadlinesOf(life, 2)).to.equal(undefined);
    expect(liveTransport(running(transport(new PluginWorkerStopped({ reason: "gone" }))))).to.equal(undefined);
    expect(liveTransport(startBegan(unstarted, Promise.resolve(worker)))).to.equal(undefined);
    expect(deadlinesOf(unstarted, 1)).to.equal(undefined);
  });

  it("disposing of a generation that does not live is refused", () => {
    const worker = transport();
    expect(() => disposed(running(worker), 1)).to.throw(/disposed/);
    expect(() => disposed(unstarted, 1)).to.throw(/disposed.*stopped/);
  });

  it("closed keeps the generations and starts nothing any more", () => {
    const life = closed(swappedIn(unstarted, generation(1)));
    expect(life.kind).to.equal("closed");
    expect(life.generations.active?.generation).to.equal(1);
  });
});

describe("plugin life: loads and restarts", () => {
  it("loads in flight are counted; a load ending with none in flight is refused", () => {
    const life = loadBegan(loadBegan(unstarted));
    expect(life.loads).to.equal(2);
    expect(loadEnded(loadEnded(life)).loads).to.equal(0);
    expect(() => loadEnded(unstarted)).to.throw(/load ended/);
  });

  it("a load enables a disabled plugin again (its file changed), its stops forgotten", () => {
    const life = loadBegan(disabledPlugin(transport()));
    expect(life).to.include({ kind: "stopped", loads: 1 });
    expect(life.crashes).to.deep.equal([]);
  });

  it("a back-off that ends leaves no transport, the restart due now, or after the loads in flight", () => {
    const worker = transport();
    const restarting = stopped(running(worker, generation(1)), worker, ownStop(1), limits);
    expect(restartDue(restarting)).to.include({ kind: "stopped", isRestartDue: false });
    const waiting = restartDue(loadBegan(restarting));
    expect(waiting).to.include({ kind: "stopped", isRestartDue: true });
    expect(isRestartAsked(waiting)).to.equal(false);
    expect(isRestartAsked(loadEnded(waiting))).to.equal(true);
  });

  it("a restart asked for again while a transport runs keeps it running", () => {
    const worker = transport();
    const life = restartDue(running(worker, generation(1)));
    expect(life).to.include({ kind: "running", isRestartDue: false });
  });

  it("a closed life asks for no restart", () => {
    const waiting = restartDue(loadBegan(unstarted));
    expect(isRestartAsked(loadEnded(closed(waiting)))).to.equal(false);
  });

  it("a rebuild that began is what loads wait for", () => {
    const rebuild = Promise.resolve();
    expect(rebuildBegan(unstarted, rebuild).rebuild).to.equal(rebuild);
  });
});

describe("plugin life: generations", () => {
  it("generation numbers only grow: a number not after the last handed out is refused", () => {
    const life = numbered(unstarted, 1);
    expect(life.generations.numbered).to.equal(1);
    expect(numbered(life, 3).generations.numbered).to.equal(3);
    expect(() => numbered(life, 1)).to.throw(/numbered 1/);
  });

  it("an attempt noted is remembered until forgotten", () => {
    const life = attempted(unstarted, "abc");
    expect(life.generations.attemptedHash).to.equal("abc");
    expect(attemptForgotten(life).generations.attemptedHash).to.equal(undefined);
  });

  it("a generation swapped in is active until retired; the worker's state is untouched", () => {
    const worker = transport();
    const first = generation(1);
    const life = swappedIn(running(worker), first);
    expect(life.generations.active).to.equal(first);
    expect(life.kind).to.equal("running");
    const second = generation(2);
    expect(swappedIn(life, second).generations.active).to.equal(second);
    expect(retired(life).generations.active).to.equal(undefined);
    expect(retired(life).kind).to.equal("running");
  });

  it("an overtaken generation is kept until forgotten, beside the active one", () => {
    const active = generation(1);
    const kept = generation(2);
    const life = overtook(swappedIn(unstarted, active), kept);
    expect(life.generations).to.include({ active, overtaken: kept });
    expect(overtakenForgotten(life).generations).to.include({ active, overtaken: undefined });
  });

  it("generations move in a closed life too (the set retires what it closes)", () => {
    const life = closed(swappedIn(unstarted, generation(1)));
    expect(retired(life)).to.include({ kind: "closed" });
    expect(retired(life).generations.active).to.equal(undefined);
  });

  it("a transition leaves the state it was given as it was", () => {
    const life = running(transport(), generation(1));
    const before = JSON.stringify({ ...life, transport: undefined });
    retired(attempted(overtook(loadBegan(life), generation(2)), "x"));
    expect(JSON.stringify({ ...life, transport: undefined })).to.equal(before);
  });
});
