// The least a proxy that reads a request can do, for `proxy-overhead` to print beside the
// context proxy: a Node HTTP server that reads each request's body, `JSON.parse`s and
// `JSON.stringify`s it, and sends it to the upstream over a kept-alive connection, relaying the
// answer as it comes. No sessions, no sources, no checks. Run in a process of its own, as the
// context proxy is (`bare-forwarder.ts UPSTREAM`): it prints its URL as one line and ends when
// stdin closes.

import http from "node:http";
import type { AddressInfo } from "node:net";

const upstream = new URL(process.argv[2] as string);
const agent = new http.Agent({ keepAlive: true });

const server = http.createServer((request, response) => {
  const chunks: Buffer[] = [];
  request.on("data", (chunk: Buffer) => chunks.push(chunk));
  request.on("end", () => {
    const body = JSON.stringify(JSON.parse(Buffer.concat(chunks).toString("utf8")));
    const { host: _host, connection: _connection, ...headers } = request.headers;
    const forwarded = http.request(
      new URL(request.url ?? "/", upstream),
      { method: request.method, headers: { ...headers, "content-length": Buffer.byteLength(body) }, agent },
      (answer) => {
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(response);
      },
    );
    forwarded.on("error", () => response.destroy());
    forwarded.end(body);
  });
});

server.listen(0, "127.0.0.1", () => {
  process.stdout.write(`http://127.0.0.1:${(server.address() as AddressInfo).port}\n`);
});
process.stdin.resume();
process.stdin.on("end", () => {
  server.close();
  server.closeAllConnections();
  agent.destroy();
});
