// The Scope rules of SPEC section 3: how resources that live and die together are released.

import { expect } from "chai";
import { ContextHostError, DisposersFailed, messageOf } from "../../core/base/errors.ts";
import { Scope } from "../../core/base/scope.ts";
import { createHost } from "../../core/host/host.ts";
import type { SessionStore } from "../../core/session/store/store.ts";

const tick = (ms = 0) => new Promise<void>((resolve) => setTimeout(resolve, ms));

async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("expected the promise to reject");
}

describe("Scope", () => {
  it("runs disposers in reverse order of addition", async () => {
    const scope = new Scope();
    const ran: string[] = [];
    for (const name of ["watcher", "timer", "registration"]) void scope.add(() => void ran.push(name));
    await scope.close();
    expect(ran).to.deep.equal(["registration", "timer", "watcher"]);
  });

  it("runs disposers one at a time, awaiting each before starting the next", async () => {
    const scope = new Scope();
    const log: string[] = [];
    let running = 0;
    let mostAtOnce = 0;
    for (const [name, ms] of [
      ["first", 5],
      ["second", 30],
      ["third", 15],
    ] as const) {
      void scope.add(async () => {
        running++;
        mostAtOnce = Math.max(mostAtOnce, running);
        log.push(`start ${name}`);
        await tick(ms);
        log.push(`end ${name}`);
        running--;
      });
    }
    await scope.close();
    expect(mostAtOnce).to.equal(1);
    expect(log).to.deep.equal(["start third", "end third", "start second", "end second", "start first", "end first"]);
  });

  it("runs each disposer exactly once however often and however concurrently it is closed", async () => {
    const scope = new Scope();
    const runs = { a: 0, b: 0 };
    void scope.add(async () => {
      await tick(5);
      runs.a++;
    });
    void scope.add(() => {
      runs.b++;
    });
    await Promise.all([scope.close(), scope.close(), scope.close()]);
    await scope.close();
    expect(runs).to.deep.equal({ a: 1, b: 1 });
  });

  it("close is idempotent and every call resolves only after every disposer finished", async () => {
    const scope = new Scope();
    let finished = 0;
    for (const ms of [25, 10]) {
      void scope.add(async () => {
        await tick(ms);
        finished++;
      });
    }
    const first = scope.close();
    await tick(1);
    const second = scope.close();
    expect(scope.isClosed).to.equal(true);
    await second;
    expect(finished).to.equal(2);
    await first;
    expect(finished).to.equal(2);
  });

  it("collects every disposer error into one DisposersFailed after running the rest", async () => {
    const scope = new Scope("plugin weather generation 3");
    const ran: string[] = [];
    const syncFailure = new Error("watcher would not close");
    const asyncFailure = new Error("timer already gone");
    void scope.add(() => void ran.push("first"));
    void scope.add(() => {
      throw syncFailure;
    });
    void scope.add(async () => {
      await tick(1);
      throw asyncFailure;
    });
    void scope.add(() => void ran.push("last"));
    const error = await rejectionOf(scope.close());
    expect(error).to.be.instanceOf(DisposersFailed).and.instanceOf(ContextHostError);
    const failed = error as DisposersFailed;
    expect(failed.name).to.equal("DisposersFailed");
    expect(failed.errors).to.deep.equal([asyncFailure, syncFailure]);
    expect(failed.scope).to.equal("plugin weather generation 3");
    expect(failed.message).to.equal("plugin weather generation 3: 2 disposers failed");
    // A diagnostic's message lists what each disposer threw.
    expect(messageOf(failed)).to.equal(
      "plugin weather generation 3: 2 disposers failed; timer already gone; watcher would not close",
    );
    expect(ran).to.deep.equal(["last", "first"]);
  });

  it("a later close reports the same DisposersFailed without running anything again", async () => {
    const scope = new Scope();
    let runs = 0;
    void scope.add(() => {
      runs++;
      throw new Error("boom");
    });
    const first = await rejectionOf(scope.close());
    const again = await rejectionOf(scope.close());
    expect(again).to.equal(first);
    expect(runs).to.equal(1);
  });

  it("a disposer added to a closed scope runs at once", async () => {
    const scope = new Scope();
    await scope.close();
    let isDisposed = false;
    await scope.add(() => {
      isDisposed = true;
    });
    expect(isDisposed).to.equal(true);
  });

  it("a disposer added while the scope is closing runs at once, not after the slow one", async () => {
    const scope = new Scope();
    const log: string[] = [];
    void scope.add(async () => {
      await tick(30);
      log.push("slow");
    });
    const closing = scope.close();
    await scope.add(() => void log.push("late"));
    await closing;
    expect(log).to.deep.equal(["late", "slow"]);
  });

  it("adding a failing disposer to a closed scope rejects with its error", async () => {
    const scope = new Scope();
    await scope.close();
    const failure = new Error("cannot release");
    expect(await rejectionOf(scope.add(() => Promise.reject(failure)))).to.equal(failure);
  });

  it("adding to an open scope does not run the disposer", async () => {
    const scope = new Scope();
    let runs = 0;
    await scope.add(() => {
      runs++;
    });
    expect(runs).to.equal(0);
    await scope.close();
    expect(runs).to.equal(1);
  });
});

describe("host.close(): the host's scope", () => {
  it("rejects with DisposersFailed naming the host when a resource fails to close; the rest still close", async () => {
    const failure = new Error("store would not close");
    const store = {
      close: async () => {
        throw failure;
      },
    } as unknown as SessionStore;
    const host = await createHost({ store, providers: {}, builtins: false, plugins: [], watch: false });
    const error = await rejectionOf(host.close());
    expect(error).to.be.instanceOf(DisposersFailed);
    expect(error).to.include({ scope: "host", message: "host: 1 disposer failed" });
    expect((error as DisposersFailed).errors).to.deep.equal([failure]);
  });
});
