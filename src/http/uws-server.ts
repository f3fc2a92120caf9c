// uWebSockets.js transport. uWS hands out request objects that die when the callback returns and
// response objects that die on abort, so everything needed later is copied out first and every
// late write is corked and guarded by the aborted flag.
import { createRequire } from 'node:module';
import { STATUS_CODES } from 'node:http';
import type * as UWS from 'uwebsockets';
import type { WireResponse } from '../api/route.js';
import type { HttpApp, RunningServer } from './types.js';

type UwsModule = typeof UWS;

let cached: UwsModule | null = null;

/** Loads the native module; throws when this platform or Node ABI has no build. */
export function loadUws(): UwsModule {
  if (!cached) {
    const require = createRequire(import.meta.url);
    const uws = require('uwebsockets') as UwsModule;
    // 'silent' stops uWS from adding its own `uWebSockets: 20` header to every response.
    (uws as UwsModule & { _cfg(key: string): void })._cfg('silent');
    cached = uws;
  }
  return cached;
}

export function startUwsServer(app: HttpApp, host: string, port: number): Promise<RunningServer> {
  const uws = loadUws();
  const server = uws.App();
  let inFlight = 0;
  let drained: (() => void) | null = null;

  server.any('/*', (res, req) => {
    const state = { aborted: false, done: false };
    const gone = new AbortController();
    res.onAborted(() => {
      state.aborted = true;
      gone.abort();
    });
    const headers: Record<string, string> = {};
    req.forEach((name, value) => {
      headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
    });
    const query = req.getQuery();
    const request = app.begin({
      method: req.getCaseSensitiveMethod(),
      url: query ? `${req.getUrl()}?${query}` : req.getUrl(),
      headers,
      ip: Buffer.from(res.getRemoteAddressAsText()).toString('utf8'),
      signal: gone.signal,
    });
    inFlight++;

    const send = (wire: WireResponse, closeConnection = false): void => {
      if (state.aborted || state.done) return;
      state.done = true;
      res.cork(() => {
        res.writeStatus(`${wire.status} ${STATUS_CODES[wire.status] ?? ''}`);
        for (const [name, value] of Object.entries(wire.headers)) {
          if (name !== 'connection' && name !== 'content-length') res.writeHeader(name, value);
        }
        res.end(wire.body, closeConnection);
      });
    };
    const settle = (): void => {
      inFlight--;
      if (inFlight === 0 && drained) drained();
    };
    const run = (): void => {
      app.handle(request).then(
        (wire) => {
          send(wire);
          settle();
        },
        () => settle(),
      );
    };

    const refused = app.precheck(request);
    if (refused) {
      send(refused, true);
      settle();
      return;
    }
    const declared = headers['content-length'];
    if ((declared === undefined || declared === '0') && headers['transfer-encoding'] === undefined) {
      run();
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    res.onData((chunk, isLast) => {
      if (state.done) return;
      size += chunk.byteLength;
      if (size > app.maxBodyBytes) {
        chunks.length = 0;
        send(app.tooLarge(request), true);
        settle();
        return;
      }
      // The ArrayBuffer is only valid during this callback, so it is copied.
      chunks.push(Buffer.from(new Uint8Array(chunk)));
      if (isLast) {
        request.body = Buffer.concat(chunks);
        run();
      }
    });
  });

  return new Promise((resolve, reject) => {
    server.listen(host, port, (listenSocket) => {
      if (!listenSocket) {
        reject(new Error(`cannot listen on ${host}:${port} (address in use or unavailable)`));
        return;
      }
      resolve({
        implementation: 'uws',
        port: uws.us_socket_local_port(listenSocket),
        close: () =>
          new Promise<void>((done) => {
            uws.us_listen_socket_close(listenSocket);
            const finish = (): void => {
              server.close();
              done();
            };
            if (inFlight === 0) finish();
            else {
              const timer = setTimeout(finish, 10_000);
              drained = () => {
                clearTimeout(timer);
                finish();
              };
            }
          }),
      });
    });
  });
}
