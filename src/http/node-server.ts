// node:http transport: the fallback where uWebSockets.js cannot load, and the reference the uWS
// adapter is tested against.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { WireResponse } from '../api/route.js';
import { DEFAULT_SHUTDOWN_GRACE_SECONDS, type HttpApp, type RunningServer } from './types.js';

export function startNodeServer(app: HttpApp, host: string, port: number): Promise<RunningServer> {
  const server = http.createServer((req, res) => serve(app, req, res));
  // Keep-alive connections must not outlive a graceful close forever.
  server.keepAliveTimeout = 5_000;
  return listen(server, host, port);
}

/** One request: precheck, buffer the body up to the limit, run, answer once. */
function serve(app: HttpApp, req: http.IncomingMessage, res: http.ServerResponse): void {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  const gone = new AbortController();
  // 'close' also follows a finished response; only an unfinished one means the client left.
  res.on('close', () => {
    if (!res.writableFinished) gone.abort();
  });
  const request = app.begin({
    method: req.method ?? 'GET',
    url: req.url ?? '/',
    headers,
    ip: req.socket.remoteAddress ?? '',
    signal: gone.signal,
  });
  const send = (wire: WireResponse): void => {
    if (res.headersSent || res.destroyed) return;
    res.writeHead(wire.status, { ...wire.headers, 'content-length': String(wire.body.length) });
    res.end(wire.body);
  };
  const refused = app.precheck(request);
  if (refused) {
    send(refused);
    return;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  let over = false;
  req.on('data', (chunk: Buffer) => {
    if (over) return;
    size += chunk.length;
    if (size > app.maxBodyBytes) {
      over = true;
      chunks.length = 0;
      send(app.tooLarge(request));
      return;
    }
    chunks.push(chunk);
  });
  req.on('end', () => {
    if (over) return;
    request.body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
    void app.handle(request).then(send);
  });
  req.on('error', () => res.destroy());
}

function listen(server: http.Server, host: string, port: number): Promise<RunningServer> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host, port }, () => {
      server.off('error', reject);
      resolve({
        implementation: 'node',
        port: (server.address() as AddressInfo).port,
        close: (graceMs = DEFAULT_SHUTDOWN_GRACE_SECONDS * 1000) =>
          new Promise<void>((done) => {
            // Past the grace, connections still answering are cut, as uWS does.
            const timer = setTimeout(() => server.closeAllConnections(), graceMs);
            server.close(() => {
              clearTimeout(timer);
              done();
            });
            server.closeIdleConnections();
          }),
      });
    });
  });
}
