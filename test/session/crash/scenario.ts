// The crash scenario: a host on a real SQLite file (or a PostgreSQL schema) whose core Context Sources change
// pseudo-randomly (seeded) between steps, and one iteration of the worker's loop. The
// worker process runs it until it is killed; the checker's own test runs it in-process
// a fixed number of times to get a database to tamper with.
//
// Sources: new values of varying size (a few bytes to a few kilobytes, so commits vary),
// removals, unavailability, one value that depends on the session's location. One
// iteration: change sources, maybe prompt, step (the scripted provider; sometimes a
// tool call, sometimes a failed attempt), sometimes compact, switch model or move.

import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import path from "node:path";
import Type from "typebox";
import { createHost, type Host, type ProviderRequest, scriptedProvider } from "../../../core/index.ts";
import type { SessionStore } from "../../../core/session/store/store.ts";
import type { CoreSource } from "../../../core/sources/core-source.ts";
import { absent, combine, make, unavailable } from "../../../core/system-context/index.ts";
import { type CrashDatabase, sqliteDatabase } from "./databases.ts";
import { groupSize, isRemovable, marks, random, renderDel, renderSet, sha256, sourceCount, sourceKey } from "./protocol.ts";

/** Receives one event line (see worker.ts for the lines). */
export type Say = (line: string) => void;

/** Store methods that commit, marked in the worker's output so the harness knows whether a kill landed inside one. */
const commits: Readonly<Record<string, string>> = { commitBoundary: "boundary", commitReply: "reply", commitSummary: "summary" };

/** The store of the host (either engine), its commits marked `C> op revision` before and `C< op revision` after. */
function marked(store: SessionStore, say: Say): SessionStore {
  return new Proxy(store, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver) as unknown;
      if (typeof value !== "function") return value;
      const method = value as (...args: unknown[]) => unknown;
      const op = typeof property === "string" ? commits[property] : undefined;
      if (op === undefined) return method.bind(target);
      return async (...args: unknown[]) => {
        say(`${marks.commitStart} ${op} ${args[1]}`);
        const committed = await method.apply(target, args);
        say(`${marks.commitEnd} ${op} ${args[1]}`);
        return committed;
      };
    },
  });
}

const Value = Type.Object({ v: Type.Integer(), pad: Type.String(), location: Type.Optional(Type.String()) });
type Value = { v: number; pad: string; location?: string };
type State = { kind: "value"; value: Value } | { kind: "absent" } | { kind: "unavailable" };

const flaky = "crash worker: flaky provider";
const pendingTurn = "a provider turn is pending; step before compacting";

/** An open scenario: its host, its session, and one iteration of the loop. */
export interface Scenario {
  readonly host: Host;
  readonly sessionId: string;
  iterate(): Promise<void>;
}

/**
 * Opens a host on `database` (default `<dataDir>/sessions.db`) and creates the session, or
 * reuses the one recorded in `<dataDir>/session-id`.
 */
export async function openScenario(options: {
  dataDir: string;
  seed: number;
  tag: string;
  say: Say;
  database?: CrashDatabase;
}): Promise<Scenario> {
  const { dataDir, tag, say } = options;
  const rng = random(options.seed);

  function freshValue(): Value {
    const letters = "abcdefghijklmnopqrstuvwxyz";
    const length = rng() < 0.2 ? Math.floor(rng() * 4000) : Math.floor(rng() * 40);
    let pad = "";
    for (let i = 0; i < length; i++) pad += letters[Math.floor(rng() * letters.length)];
    return { v: Math.floor(rng() * 1000), pad };
  }

  const states: State[] = Array.from({ length: sourceCount }, () => ({ kind: "value", value: freshValue() }));

  function mutate(): void {
    for (let i = 0; i < sourceCount; i++) {
      if (rng() >= 0.15) continue;
      const r = rng();
      if (states[i]?.kind !== "value" || r < 0.7) states[i] = { kind: "value", value: freshValue() };
      // A non-removable source turning absent escalates to a replacement (a new epoch): rarer.
      else if (r < 0.88 && (isRemovable(i) || rng() < 0.3)) states[i] = { kind: "absent" };
      else states[i] = { kind: "unavailable" };
    }
  }

  function source(i: number, location: string) {
    const key = sourceKey(i);
    return make({
      key,
      schema: Value,
      load: () => {
        const state = states[i] as State;
        if (state.kind === "absent") return absent;
        if (state.kind === "unavailable") return unavailable;
        return i === 0 ? { ...state.value, location } : state.value;
      },
      baseline: (value) => renderSet(key, value),
      update: (_previous, value) => renderSet(key, value),
      ...(isRemovable(i) ? { removed: () => renderDel(key) } : {}),
    });
  }

  const core: CoreSource[] = [];
  for (let first = 0; first < sourceCount; first += groupSize) {
    const members = Array.from({ length: Math.min(groupSize, sourceCount - first) }, (_, j) => first + j);
    core.push({
      key: `crash/group${first / groupSize}`,
      load: (env) => combine(members.map((i) => source(i, env.location))),
    });
  }

  const scripted = scriptedProvider();
  let calls = 0;
  const provider = {
    async send(request: ProviderRequest) {
      if (rng() < 0.05) scripted.failNext(1, new Error(flaky));
      const reply = await scripted.send(request);
      scripted.requests.length = 0; // the worker never stops: keep memory flat
      if (request.messages.at(-1)?.role !== "tool" && rng() < 0.25) {
        calls += 1;
        return { text: reply.text, toolCalls: [{ id: `call-${tag}-${calls}`, name: "echo", input: { n: calls } }] };
      }
      return reply;
    },
  };

  const host = await createHost({
    dataDir,
    store: marked(await (options.database ?? sqliteDatabase(dataDir)).openStore(), say),
    providers: { scripted: provider },
    systemPrompt: "You are the crash worker's model.",
    core,
    builtins: false,
    plugins: [],
    watch: false,
    // A killed worker's lease must not keep its successor waiting long.
    leaseMs: 200,
    tools: { echo: (input) => JSON.stringify(input) },
  });

  // Session locations must be existing folders.
  const locationA = path.join(dataDir, "a");
  const locationB = path.join(dataDir, "b");
  mkdirSync(locationA, { recursive: true });
  mkdirSync(locationB, { recursive: true });
  const idFile = path.join(dataDir, "session-id");
  let sessionId: string;
  if (existsSync(idFile)) {
    sessionId = readFileSync(idFile, "utf8");
  } else {
    sessionId = await host.createSession({ location: locationA, provider: "scripted", model: "m0" });
    writeFileSync(`${idFile}.tmp`, sessionId);
    renameSync(`${idFile}.tmp`, idFile);
  }

  let i = 0;
  async function iterate(): Promise<void> {
    i += 1;
    mutate();
    if (rng() < 0.6) {
      const text = `prompt ${tag} ${i}`;
      await host.prompt(sessionId, text);
      say(`${marks.prompt} ${text}`);
    }
    try {
      const result = await host.step(sessionId);
      if (result.kind === "replied") say(`${marks.sent} ${sha256(result.request.system.at(-1) ?? "")}`);
    } catch (error) {
      if (!(error instanceof Error && error.message === flaky)) throw error;
    }
    const r = rng();
    try {
      if (r < 0.04) await host.compact(sessionId);
      else if (r < 0.05) await host.switchModel(sessionId, { model: `m${i}` });
      else if (r < 0.06) await host.move(sessionId, rng() < 0.5 ? locationA : locationB);
    } catch (error) {
      const message = error instanceof Error ? error.message : "";
      if (message !== flaky && !message.endsWith(pendingTurn)) throw error;
    }
  }

  return { host, sessionId, iterate };
}
