// Owns `startInspector`: the inspector's web server on 127.0.0.1, with node:http only.
// It serves the page, its script and stylesheet, JSON views of an `InspectorSource`,
// and `/events`, a Server-Sent Events stream that tells open pages what changed as it
// changes (decision 080). Only the loopback address is bound, and a request naming
// another host (a DNS-rebinding page) is refused.

import http from "node:http";
import type { AddressInfo } from "node:net";
import { ContextHostError } from "../../../core/index.ts";
import { messageOf } from "../message.ts";
import { pageCss, pageHtml } from "./page.ts";
import { pageScript } from "./page-script.ts";
import type { InspectorEvent, InspectorSource } from "./source.ts";

export interface InspectorOptions {
  readonly source: InspectorSource;
  /** TCP port; 0 (the default) picks a free one. */
  readonly port?: number;
  /** The only address the inspector binds. */
  readonly host?: "127.0.0.1";
}

/** A running inspector. */
export interface Inspector {
  /** `http://127.0.0.1:PORT/`. */
  readonly url: string;
  /** Ends every open event stream and stops listening. */
  close(): Promise<void>;
}

/** The inspector's port cannot be listened on (in use, or not allowed); names the port. */
export class InspectorPortUnavailable extends ContextHostError {
  readonly port: number;
  constructor(options: { readonly port: number; readonly reason: string; readonly cause?: unknown }) {
    super(`inspector: cannot listen on 127.0.0.1:${options.port}: ${options.reason}`, { cause: options.cause });
    this.port = options.port;
  }
}

const securityHeaders = {
  // The page runs its own script and style only, talks only to this server, and cannot be framed.
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cache-control": "no-store",
};

const assets: Readonly<Record<string, { readonly type: string; readonly body: string }>> = {
  "/": { type: "text/html; charset=utf-8", body: pageHtml },
  "/inspector.js": { type: "text/javascript; charset=utf-8", body: pageScript },
  "/inspector.css": { type: "text/css; charset=utf-8", body: pageCss },
};

/** Starts the inspector over `source`; resolves once it listens. */
export async function startInspector(options: InspectorOptions): Promise<Inspector> {
  const { source } = options;
  const port = options.port ?? 0;
  const streams = new Set<http.ServerResponse>();
  let sent = 0;

  const broadcast = (event: InspectorEvent) => {
    sent += 1;
    const frame = `id: ${sent}\nevent: change\ndata: ${JSON.stringify(event)}\n\n`;
    for (const stream of streams) stream.write(frame);
  };

  const server = http.createServer((request, response) => {
    void serve(request, response).catch((error: unknown) => {
      if (!response.headersSent) sendJson(response, 500, { error: messageOf(error) });
      else response.destroy();
    });
  });

  async function serve(request: http.IncomingMessage, response: http.ServerResponse) {
    if (!isOwnHost(request.headers.host, listening())) return sendJson(response, 421, { error: "unexpected Host header" });
    if (request.method !== "GET" && request.method !== "HEAD") {
      response.writeHead(405, { ...securityHeaders, allow: "GET, HEAD" }).end();
      return;
    }
    const pathname = new URL(request.url ?? "/", "http://127.0.0.1").pathname;
    const asset = assets[pathname];
    if (asset !== undefined) {
      response.writeHead(200, { ...securityHeaders, "content-type": asset.type }).end(asset.body);
      return;
    }
    if (pathname === "/events") return openStream(response);
    if (pathname === "/api/state") {
      const [sessions, plugins, problems, mcpServers] = await Promise.all([
        source.sessions(),
        source.plugins(),
        source.problems(),
        source.mcpServers?.() ?? [],
      ]);
      return sendJson(response, 200, { sessions, plugins, problems, mcpServers });
    }
    if (pathname.startsWith("/api/sessions/")) {
      let id: string;
      try {
        id = decodeURIComponent(pathname.slice("/api/sessions/".length));
      } catch {
        return sendJson(response, 400, { error: "malformed session id" });
      }
      const view = await source.session(id);
      return view === undefined ? sendJson(response, 404, { error: `no session ${id}` }) : sendJson(response, 200, view);
    }
    if (pathname === "/favicon.ico") {
      response.writeHead(204, securityHeaders).end();
      return;
    }
    sendJson(response, 404, { error: `no such page: ${pathname}` });
  }

  function openStream(response: http.ServerResponse) {
    response.writeHead(200, {
      ...securityHeaders,
      "content-type": "text/event-stream; charset=utf-8",
      connection: "keep-alive",
    });
    // A page that loses the connection asks again after a second (EventSource does so by itself).
    response.write("retry: 1000\n\n");
    streams.add(response);
    response.on("close", () => streams.delete(response));
  }

  const unsubscribe = source.subscribe(broadcast);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, "127.0.0.1", () => {
        server.off("error", reject);
        resolve();
      });
    });
  } catch (error) {
    unsubscribe();
    const code = (error as NodeJS.ErrnoException).code;
    throw new InspectorPortUnavailable({
      port,
      reason: code === "EADDRINUSE" ? "the port is in use" : code === "EACCES" ? "not allowed" : messageOf(error),
      cause: error,
    });
  }

  function listening(): number {
    return (server.address() as AddressInfo).port;
  }

  let closing: Promise<void> | undefined;
  return {
    url: `http://127.0.0.1:${listening()}/`,
    close() {
      closing ??= new Promise<void>((resolve) => {
        unsubscribe();
        for (const stream of streams) stream.end();
        streams.clear();
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}

/** Whether a request's Host header names this server (by loopback address or `localhost`). */
function isOwnHost(header: string | undefined, port: number): boolean {
  if (header === undefined) return false;
  return [`127.0.0.1:${port}`, `localhost:${port}`].includes(header.toLowerCase());
}

function sendJson(response: http.ServerResponse, status: number, body: unknown) {
  response.writeHead(status, { ...securityHeaders, "content-type": "application/json; charset=utf-8" }).end(JSON.stringify(body));
}
