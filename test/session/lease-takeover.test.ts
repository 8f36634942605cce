// A lease whose holder is gone (issue 32, decision 177): the holder string names the
// machine, the process (pid and start time) and the runtime; a holder on this machine that
// no longer runs, or whose pid now belongs to another process, is taken over at once, and a
// live holder (this process, a live child) or one of another machine never is.

import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { expect } from "chai";
import { type ProviderRequest, scriptedProvider } from "../../core/index.ts";
import {
  formatHolder,
  isHolderGone,
  newLeaseHolder,
  parseHolder,
  probeProcess,
  thisMachine,
} from "../../core/session/lease-holder.ts";
import { programArgs } from "../support/compiled.ts";
import { hostsPerTest, requestOf, sleep, transcript } from "./fixtures.ts";

/** This process as a lease holder names it, with another runtime id. */
function thisProcess(): ReturnType<typeof parseHolder> & object {
  return parseHolder(newLeaseHolder()) as NonNullable<ReturnType<typeof parseHolder>>;
}

/** A pid no process has: a child that ran and was reaped. */
async function exitedPid(): Promise<number> {
  const child = spawn(process.execPath, ["-e", ""], { stdio: "ignore" });
  await once(child, "exit");
  return child.pid as number;
}

describe("session runtime: a lease whose holder is gone", () => {
  describe("the holder string", () => {
    it("names this machine, this process and its start time, and a fresh runtime each time", () => {
      const first = thisProcess();
      const second = thisProcess();
      expect(first.machine).to.equal(thisMachine());
      expect(first.pid).to.equal(process.pid);
      expect(first.started).to.equal(probeProcess(process.pid).started ?? "-");
      expect(first.runtime).to.not.equal(second.runtime);
      expect(parseHolder(formatHolder(first))).to.deep.equal(first);
    });

    it("a holder of this process, running, is not gone", () => {
      expect(isHolderGone(newLeaseHolder())).to.equal(false);
    });

    it("a holder on this machine whose process has exited is gone", async () => {
      expect(isHolderGone(formatHolder({ ...thisProcess(), pid: await exitedPid() }))).to.equal(true);
    });

    it("a holder whose pid now belongs to a process that started at another time is gone (pid reuse)", () => {
      const reused = formatHolder({ ...thisProcess(), started: "1" });
      const running = { isRunning: true, started: "2" };
      expect(isHolderGone(reused, () => running)).to.equal(true);
      expect(isHolderGone(formatHolder({ ...thisProcess(), started: "2" }), () => running)).to.equal(false);
    });

    it("a holder of another machine, or one that is not of this shape, is never taken for gone", async () => {
      const gone = await exitedPid();
      expect(isHolderGone(formatHolder({ ...thisProcess(), machine: "elsewhere:-:-", pid: gone }))).to.equal(false);
      expect(isHolderGone("crashed", () => ({ isRunning: false }))).to.equal(false);
      expect(isHolderGone("3b9e4c1e-9a0d-4a55-8a3c-6f0e1f2d3c4b", () => ({ isRunning: false }))).to.equal(false);
    });
  });

  describe("across processes on one SQLite file", () => {
    const { folder, start, startSession } = hostsPerTest();
    const children: ChildProcess[] = [];
    afterEach(() => {
      for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    });

    /** A child process stepping `id` against a provider that never answers; resolves with the request once it is sent. */
    async function childStepping(id: string): Promise<{ child: ChildProcess; request: ProviderRequest }> {
      const child = spawn(process.execPath, [...programArgs("test/session/lease-holder-child.ts"), folder.path, id], {
        stdio: ["ignore", "pipe", "inherit"],
      });
      children.push(child);
      let output = "";
      child.stdout?.setEncoding("utf8");
      for await (const chunk of child.stdout as AsyncIterable<string>) {
        output += chunk;
        if (output.includes("\n")) break;
      }
      if (!output.includes("\n")) throw new Error(`the child exited (${child.exitCode}) before calling its provider`);
      return { child, request: JSON.parse(output.slice(0, output.indexOf("\n"))) as ProviderRequest };
    }

    it("a child killed during its provider call leaves a lease the next host takes over at once; while the child lives it is not taken", async function () {
      this.timeout(30_000);
      const provider = scriptedProvider();
      const { host, id } = await startSession(provider, { core: [] });
      await host.prompt(id, "one");

      const { child, request } = await childStepping(id);
      expect((await host.step(id)).kind, "a live holder keeps its lease").to.equal("in-flight");
      expect(provider.requests).to.have.length(0);

      child.kill("SIGKILL");
      await once(child, "exit");
      const resumed = await host.step(id);
      expect(requestOf(resumed), "the identical request, sent again").to.deep.equal(request);
      expect(transcript(await host.messages(id))).to.deep.equal(["user: one", "assistant: reply 1: one"]);
    });

    it("a lease held by another runtime of this process is not taken over", async () => {
      let answer = () => {};
      const held = new Promise<void>((resolve) => {
        answer = resolve;
      });
      const first = scriptedProvider([
        async () => {
          await held;
          return { text: "first" };
        },
      ]);
      const { host, id } = await startSession(first, { core: [] });
      await host.prompt(id, "one");
      const stepping = host.step(id);
      while (first.requests.length === 0) await sleep(1);
      const second = scriptedProvider();
      const other = await start({ providers: { scripted: second }, core: [] });
      expect((await other.step(id)).kind).to.equal("in-flight");
      expect(second.requests).to.have.length(0);
      answer();
      expect((await stepping).kind).to.equal("replied");
    });
  });
});
