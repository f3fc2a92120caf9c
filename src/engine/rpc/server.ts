// An engine served to its callers: the Engine service and the standard health service on one gRPC
// server, on the engine process's private Unix socket (the HTTP workers and the primary of its
// node) or on TCP for API nodes elsewhere (TLS with a certificate; every call but a health check
// proves the shared secret before its message is read, guard.ts, on connections port.ts bounds). A
// call's cancellation, its deadline and the loss of its connection (a worker that died) all reach
// the engine the same way: the job's signal aborts and the scheduler drops the job at its next
// batch.
import fs from 'node:fs';
import * as grpc from '@grpc/grpc-js';
import { newEngineName } from './auth.js';
import { formatEngineAddress } from './address.js';
import { engineGuard, guardedService } from './guard.js';
import { EnginePort, type PortBounds } from './port.js';
import { ENGINE_SERVICE, errorStatus, MAX_MESSAGE_BYTES, replyMessage, scoreRequest, EngineClient, HealthClient, type ScoreMessage } from './codec.js';
import type { EngineInfo, EngineService, EngineStats } from '../types.js';

/** What an engine server serves. */
export interface ServedEngine extends EngineService {
  stats(): EngineStats;
}

export interface TlsFiles {
  cert: Buffer;
  key: Buffer;
}

export type ListenOn = { path: string } | { host: string; port: number; secret: string; tls?: TlsFiles; bounds?: PortBounds };

export interface EngineServer {
  /** The socket path, or tcp://host:port / tls://host:port with the port resolved when 0 was asked. */
  address: string;
  close(): Promise<void>;
}

/**
 * Calls one TCP connection may have open at once: past it HTTP/2 refuses the stream
 * (REFUSED_STREAM) before anything of it is read. A gRPC client would hold its further calls until
 * one ends, out of sight of the engine's fair scheduling and admission, so the bound is far above
 * what one HTTP worker has in flight (32 a key by default); a connection proves nothing before its
 * first call is checked, and that is what this bounds.
 */
export const MAX_CONCURRENT_STREAMS = 1024;

const SERVER_OPTIONS: grpc.ServerOptions = {
  'grpc.max_receive_message_length': MAX_MESSAGE_BYTES,
  'grpc.max_send_message_length': MAX_MESSAGE_BYTES,
  // An API node that vanished without closing its connection (a cut network) has its calls
  // cancelled once pings go unanswered, instead of holding its jobs until their deadlines.
  'grpc.keepalive_time_ms': 30_000,
  'grpc.keepalive_timeout_ms': 10_000,
};

export async function serveEngine(engine: ServedEngine, on: ListenOn, log: (line: string) => void): Promise<EngineServer> {
  if ('path' in on) {
    const server = new grpc.Server(SERVER_OPTIONS);
    addServices(server, EngineClient.service, engine);
    await bind(server, `unix:${on.path}`, grpc.ServerCredentials.createInsecure());
    // The directory is private already; the socket is made so too.
    fs.chmodSync(on.path, 0o600);
    return { address: on.path, close: async () => server.forceShutdown() };
  }
  const port = new EnginePort(on.bounds);
  const guard = engineGuard({ secret: on.secret, name: newEngineName(), service: EngineClient.service, port, log });
  const server = new grpc.Server({ ...SERVER_OPTIONS, 'grpc.max_concurrent_streams': MAX_CONCURRENT_STREAMS, interceptors: [guard] });
  addServices(server, guardedService(EngineClient.service), engine);
  const credentials = on.tls
    ? grpc.ServerCredentials.createSsl(null, [{ cert_chain: on.tls.cert, private_key: on.tls.key }], false)
    : grpc.ServerCredentials.createInsecure();
  const injector = server.createConnectionInjector(credentials);
  const bound = await port
    .listen(on.host, on.port, (socket) => injector.injectConnection(socket))
    .catch((err: unknown) => {
      server.forceShutdown();
      throw err;
    });
  return {
    address: formatEngineAddress(on.host, bound, Boolean(on.tls)),
    async close() {
      // Calls in flight are cut: their callers learn the engine went away, as when it dies. The
      // injector's connections are its own to end: the server's shutdown knows only those it bound.
      injector.drain(0);
      server.forceShutdown();
      await port.close();
    },
  };
}

/** The Engine service over `engine`, and the health service. */
function addServices(server: grpc.Server, service: grpc.ServiceDefinition, engine: ServedEngine): void {
  server.addService(service, {
    info: (_call: grpc.ServerUnaryCall<unknown, unknown>, callback: grpc.sendUnaryData<unknown>) => {
      engine.info().then(
        (info: EngineInfo) => callback(null, { factsJson: JSON.stringify(info) }),
        (err: unknown) => callback(errorStatus(err)),
      );
    },
    stats: (_call: grpc.ServerUnaryCall<unknown, unknown>, callback: grpc.sendUnaryData<unknown>) => {
      try {
        callback(null, { statsJson: JSON.stringify(engine.stats()) });
      } catch (err) {
        callback(errorStatus(err));
      }
    },
    score: (call: grpc.ServerUnaryCall<ScoreMessage, unknown>, callback: grpc.sendUnaryData<unknown>) => {
      const aborter = new AbortController();
      let settled = false;
      // Emitted when the caller cancels, when the deadline passes and when the connection is lost;
      // also once after an answer went out, when it means nothing.
      call.on('cancelled', () => {
        if (!settled) aborter.abort();
      });
      const deadline = call.getDeadline();
      engine.scoreText(scoreRequest(call.request, deadline instanceof Date ? deadline.getTime() : deadline), aborter.signal).then(
        (result) => {
          settled = true;
          callback(null, replyMessage(result));
        },
        (err: unknown) => {
          settled = true;
          callback(errorStatus(err));
        },
      );
    },
  });
  server.addService(HealthClient.service, {
    check: (call: grpc.ServerUnaryCall<{ service: string }, unknown>, callback: grpc.sendUnaryData<unknown>) => {
      const service = call.request.service;
      if (service !== '' && service !== ENGINE_SERVICE) return callback({ code: grpc.status.NOT_FOUND, details: `no service ${service}` });
      let wedged = true;
      try {
        wedged = engine.stats().wedged;
      } catch {
        // An engine that cannot say how it is, is not serving.
      }
      callback(null, { status: wedged ? 'NOT_SERVING' : 'SERVING' });
    },
  });
}

function bind(server: grpc.Server, target: string, credentials: grpc.ServerCredentials): Promise<number> {
  return new Promise((resolve, reject) => server.bindAsync(target, credentials, (err, port) => (err ? reject(err) : resolve(port))));
}
