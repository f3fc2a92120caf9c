// uWebSockets.js transport. uWS hands out request objects that die when the callback returns and
// response objects that die on abort, so everything needed later is copied out first and every
// late write is corked and guarded by the aborted flag.
import { createRequire } from 'node:module';
import path from 'node:path';
import { STATUS_CODES } from 'node:http';
import type * as UWS from 'uwebsockets';
import type { WireResponse } from '../api/route.js';
import { DEFAULT_SHUTDOWN_GRACE_SECONDS, type HttpApp, type RunningServer } from './types.js';

type UwsModule = typeof UWS;

let cached: UwsModule | null = null;

/**
 * The package's version and the binary it loads on this platform and Node ABI, named as the
 * package's own loader (uws.js) names it.
 */
export function uwsBinary(): { version: string; file: string } {
  const require = createRequire(import.meta.url);
  const dir = path.dirname(require.resolve('uwebsockets/package.json'));
  const { version } = require('uwebsockets/package.json') as { version: string };
  return { version, file: path.join(dir, `uws_${process.platform}_${process.arch}_${process.versions.modules}.node`) };
}

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
  const inFlight = new InFlight();
  server.any('/*', (res, req) => serve(app, inFlight, res, req));
  return listen(uws, server, host, port, inFlight);
}

/** Requests begun and not yet settled, so that a graceful close knows when it may finish. */
class InFlight {
  private count = 0;
  private drained: (() => void) | null = null;

  get idle(): boolean {
    return this.count === 0;
  }

  begin(): void {
    this.count++;
  }

  settle(): void {
    this.count--;
    if (this.count === 0 && this.drained) this.drained();
  }

  /** Calls `fn` whenever the last request in flight settles, from now on. */
  whenDrained(fn: () => void): void {
    this.drained = fn;
  }
}

/** One request, from uWS's callback to its answer. Only the answer comes late: `req` is read before the callback returns. */
function serve(app: HttpApp, inFlight: InFlight, res: UWS.HttpResponse, req: UWS.HttpRequest): void {
  const reply = guard(res);
  const init = readRequest(req, res, reply.signal);
  const request = app.begin(init);
  inFlight.begin();

  const refuse = (wire: WireResponse): void => {
    reply.send(wire, true);
    inFlight.settle();
  };
  const run = (): void => {
    app.handle(request).then(
      (wire) => {
        reply.send(wire);
        inFlight.settle();
      },
      () => inFlight.settle(),
    );
  };

  const refused = app.precheck(request);
  if (refused) {
    refuse(refused);
    return;
  }
  const declared = init.headers['content-length'];
  if ((declared === undefined || declared === '0') && init.headers['transfer-encoding'] === undefined) {
    run();
    return;
  }
  readBody(res, reply, app.maxBodyBytes, {
    whole: (body) => {
      request.body = body;
      run();
    },
    tooLarge: () => refuse(app.tooLarge(request)),
  });
}

/** A uWS response that is written at most once, and never after the client aborted (uWS frees it then). */
interface GuardedReply {
  /** Aborts when the client goes away. */
  signal: AbortSignal;
  /** Whether the answer has been written. */
  readonly done: boolean;
  send(wire: WireResponse, closeConnection?: boolean): void;
}

function guard(res: UWS.HttpResponse): GuardedReply {
  const state = { aborted: false, done: false };
  const gone = new AbortController();
  res.onAborted(() => {
    state.aborted = true;
    gone.abort();
  });
  return {
    signal: gone.signal,
    get done() {
      return state.done;
    },
    send(wire, closeConnection = false) {
      if (state.aborted || state.done) return;
      state.done = true;
      writeResponse(res, wire, closeConnection);
    },
  };
}

/** Status, headers and body in one corked write (uWS writes Content-Length and Connection itself). */
function writeResponse(res: UWS.HttpResponse, wire: WireResponse, closeConnection: boolean): void {
  res.cork(() => {
    res.writeStatus(`${wire.status} ${STATUS_CODES[wire.status] ?? ''}`);
    for (const [name, value] of Object.entries(wire.headers)) {
      if (name !== 'connection' && name !== 'content-length') res.writeHeader(name, value);
    }
    res.end(wire.body, closeConnection);
  });
}

/** What the application needs of uWS's request, copied out now: the request dies when the callback returns. */
function readRequest(req: UWS.HttpRequest, res: UWS.HttpResponse, signal: AbortSignal): Parameters<HttpApp['begin']>[0] {
  const headers: Record<string, string> = {};
  req.forEach((name, value) => {
    headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
  });
  const query = req.getQuery();
  return {
    method: req.getCaseSensitiveMethod(),
    url: query ? `${req.getUrl()}?${query}` : req.getUrl(),
    headers,
    ip: Buffer.from(res.getRemoteAddressAsText()).toString('utf8'),
    signal,
  };
}

/** Buffers the body as uWS streams it; past `maxBytes` it is dropped and refused instead. */
function readBody(res: UWS.HttpResponse, reply: GuardedReply, maxBytes: number, on: { whole: (body: Buffer) => void; tooLarge: () => void }): void {
  const chunks: Buffer[] = [];
  let size = 0;
  res.onData((chunk, isLast) => {
    if (reply.done) return;
    size += chunk.byteLength;
    if (size > maxBytes) {
      chunks.length = 0;
      on.tooLarge();
      return;
    }
    // The ArrayBuffer is only valid during this callback, so it is copied.
    chunks.push(Buffer.from(new Uint8Array(chunk)));
    if (isLast) on.whole(Buffer.concat(chunks));
  });
}

function listen(uws: UwsModule, server: UWS.TemplatedApp, host: string, port: number, inFlight: InFlight): Promise<RunningServer> {
  return new Promise((resolve, reject) => {
    server.listen(host, port, (listenSocket) => {
      if (!listenSocket) {
        reject(new Error(`cannot listen on ${host}:${port} (address in use or unavailable)`));
        return;
      }
      resolve({
        implementation: 'uws',
        port: uws.us_socket_local_port(listenSocket),
        close: (graceMs = DEFAULT_SHUTDOWN_GRACE_SECONDS * 1000) => closeGracefully(uws, server, listenSocket, inFlight, graceMs),
      });
    });
  });
}

/** Stops accepting, then closes once the requests in flight have settled, or after `graceMs` regardless. */
function closeGracefully(uws: UwsModule, server: UWS.TemplatedApp, listenSocket: UWS.us_listen_socket, inFlight: InFlight, graceMs: number): Promise<void> {
  return new Promise<void>((done) => {
    uws.us_listen_socket_close(listenSocket);
    const finish = (): void => {
      server.close();
      done();
    };
    if (inFlight.idle) finish();
    else {
      const timer = setTimeout(finish, graceMs);
      inFlight.whenDrained(() => {
        clearTimeout(timer);
        finish();
      });
    }
  });
}
