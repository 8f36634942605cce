// What the inspector tests share: a real host on a temp plugin folder and SQLite file,
// its requests recorded, the inspector over it on an ephemeral port, and a reader of
// the inspector's event stream. Everything started is closed by `stop`.

import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createHost, type Host, scriptedProvider } from "../../core/index.ts";
import { SqliteSessionStore } from "../../core/store.ts";
import {
  type HostInspectorSource,
  hostInspectorSource,
  type Inspector,
  type InspectorEvent,
  startInspector,
} from "../../scripts/cli/inspector/index.ts";

/** The weather plugin: one source `weather/today` whose value is `value`. */
export function weatherPlugin(value: string): string {
  return `import { definePlugin } from "context-host";
import Type from "typebox";

export default definePlugin({
  name: "weather",
  setup(api) {
    api.source({
      key: "weather/today",
      schema: Type.String(),
      load: () => ${JSON.stringify(value)},
      baseline: (v) => \`Weather today: \${v}\`,
      update: (_previous, v) => \`Weather is now \${v}\`,
    });
  },
});
`;
}

export interface Inspected {
  readonly folder: string;
  readonly pluginFile: string;
  readonly host: Host;
  readonly source: HostInspectorSource;
  readonly inspector: Inspector;
  /** Resolves when the weather plugin reaches `generation`. */
  activated(generation: number): Promise<void>;
}

/** Starts and stops hosts and inspectors per test. */
export function useInspected() {
  const started: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const stop of started.splice(0).reverse()) await stop();
  });
  return {
    async start(options: {
      readonly weather: string;
      readonly builtins?: boolean;
      /** More plugin files for the plugin folder, by file name. */
      readonly plugins?: Readonly<Record<string, string>>;
    }): Promise<Inspected> {
      const folder = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "context-host-inspector-")));
      started.push(async () => fs.rmSync(folder, { recursive: true, force: true }));
      const plugins = path.join(folder, "plugins");
      fs.mkdirSync(plugins);
      const pluginFile = path.join(plugins, "weather.ts");
      fs.writeFileSync(pluginFile, weatherPlugin(options.weather));
      for (const [name, text] of Object.entries(options.plugins ?? {})) fs.writeFileSync(path.join(plugins, name), text);
      const store = new SqliteSessionStore(path.join(folder, "data", "sessions.db"));
      const real = await createHost({
        providers: { scripted: scriptedProvider() },
        store,
        plugins: [plugins],
        watch: true,
        debounceMs: 10,
        builtins: options.builtins ?? false,
        timeZone: "UTC",
        systemPrompt: "You are a test agent.",
        // The tests read problems from the inspector; nothing printed.
        onDiagnostic: false,
      });
      started.push(() => real.close());
      // The requests come from the host's public boundary events: no provider is wrapped.
      const source = hostInspectorSource({ host: real, store });
      started.push(async () => source.close());
      const inspector = await startInspector({ source, port: 0, host: "127.0.0.1" });
      started.push(() => inspector.close());
      return {
        folder,
        pluginFile,
        host: source.host,
        source,
        inspector,
        activated: (generation) =>
          new Promise((resolve) => {
            const off = real.onPluginEvent((event) => {
              if (event.kind === "activated" && event.plugin === "weather" && event.generation >= generation) {
                off();
                resolve();
              }
            });
            if ((real.plugins().find((p) => p.name === "weather")?.generation ?? 0) >= generation) {
              off();
              resolve();
            }
          }),
      };
    },
  };
}

/** A reader of the inspector's `/events` stream: the change events in order. */
export interface EventReader {
  /** Resolves with the first event (not taken before) that matches, or fails after `timeoutMs`. */
  next(matches: (event: InspectorEvent) => boolean, what: string, timeoutMs?: number): Promise<InspectorEvent>;
  readonly received: InspectorEvent[];
  close(): void;
}

/** Opens `/events` of `url` and resolves once the stream is open. */
export async function readEvents(url: string): Promise<EventReader> {
  const controller = new AbortController();
  const response = await fetch(new URL("/events", url), { signal: controller.signal });
  if (response.headers.get("content-type")?.startsWith("text/event-stream") !== true)
    throw new Error(`/events is not an event stream: ${response.headers.get("content-type")}`);
  const received: InspectorEvent[] = [];
  let taken = 0;
  const waiters = new Set<() => void>();
  const reader = (response.body as ReadableStream<Uint8Array>).pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  void (async () => {
    for (;;) {
      const chunk = await reader.read().catch(() => ({ done: true as const, value: undefined }));
      if (chunk.done) return;
      buffer += chunk.value;
      let end = buffer.indexOf("\n\n");
      while (end >= 0) {
        const frame = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const lines = frame.split("\n");
        if (lines.includes("event: change")) {
          const data = lines.find((line) => line.startsWith("data: "));
          if (data !== undefined) received.push(JSON.parse(data.slice("data: ".length)) as InspectorEvent);
          for (const wake of waiters) wake();
        }
        end = buffer.indexOf("\n\n");
      }
    }
  })();
  return {
    received,
    next(matches, what, timeoutMs = 4000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          for (let i = taken; i < received.length; i++) {
            const event = received[i] as InspectorEvent;
            if (matches(event)) {
              taken = i + 1;
              waiters.delete(check);
              clearTimeout(timer);
              resolve(event);
              return;
            }
          }
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`no ${what} event within ${timeoutMs} ms; received ${JSON.stringify(received.slice(taken))}`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    close: () => controller.abort(),
  };
}

/** GETs a JSON view of the inspector. */
export async function getJson<T>(inspector: Inspector, pathname: string): Promise<{ status: number; body: T }> {
  const response = await fetch(new URL(pathname, inspector.url));
  return { status: response.status, body: (await response.json()) as T };
}
