// node:http transport: the fallback where uWebSockets.js cannot load, and the reference the uWS
// adapter is tested against.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { WireResponse } from '../api/route.js';
import { DiscardBudget, LINGER_SECONDS } from './linger.js';
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
    lingeringRefusal(req, res, refused, app.maxBodyBytes);
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
      lingeringRefusal(req, res, app.tooLarge(request), app.maxBodyBytes);
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

/**
 * Answers a request refused before its body was read (linger.ts says why): the answer goes out
 * now, the rest of the body is read and dropped, and the answer ends with the request, closing
 * the connection (the refusal says Connection: close). A client that sends past the bound, or for
 * longer than LINGER_SECONDS, is cut off.
 */
function lingeringRefusal(req: http.IncomingMessage, res: http.ServerResponse, wire: WireResponse, maxBodyBytes: number): void {
  if (res.headersSent || res.destroyed) return;
  res.writeHead(wire.status, { ...wire.headers, 'content-length': String(wire.body.length) });
  if (req.complete) {
    res.end(wire.body);
    return;
  }
  res.write(wire.body);
  const budget = new DiscardBudget(maxBodyBytes);
  const cut = (): void => {
    clearTimeout(timer);
    res.destroy();
  };
  const timer = setTimeout(cut, LINGER_SECONDS * 1000);
  res.on('close', () => clearTimeout(timer));
  req.on('data', (chunk: Buffer) => {
    if (!budget.drop(chunk.length)) cut();
  });
  req.on('end', () => {
    clearTimeout(timer);
    res.end();
  });
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
