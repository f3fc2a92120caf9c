// An engine served to its callers: the Engine service and the standard health service on one gRPC
// server, on the engine process's private Unix socket (the HTTP workers and the primary of its
// node) or on TCP for API nodes elsewhere (TLS with a certificate; every call but a health check
// proves the shared secret). A call's cancellation, its deadline and the loss of its connection (a
// worker that died) all reach the engine the same way: the job's signal aborts and the scheduler
// drops the job at its next batch.
import fs from 'node:fs';
import * as grpc from '@grpc/grpc-js';
import { answerCall, CallVerifier } from './auth.js';
import { formatEngineAddress, hostPort } from './address.js';
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

export type ListenOn = { path: string } | { host: string; port: number; secret: string; tls?: TlsFiles };

export interface EngineServer {
  /** The socket path, or tcp://host:port / tls://host:port with the port resolved when 0 was asked. */
  address: string;
  close(): Promise<void>;
}

const SERVER_OPTIONS: grpc.ServerOptions = {
  'grpc.max_receive_message_length': MAX_MESSAGE_BYTES,
  'grpc.max_send_message_length': MAX_MESSAGE_BYTES,
  // An API node that vanished without closing its connection (a cut network) has its calls
  // cancelled once pings go unanswered, instead of holding its jobs until their deadlines.
  'grpc.keepalive_time_ms': 30_000,
  'grpc.keepalive_timeout_ms': 10_000,
};

/** A refusal is logged once a minute per peer and reason: a misconfigured node retries every few seconds. */
const REFUSAL_LOG_MS = 60_000;

export async function serveEngine(engine: ServedEngine, on: ListenOn, log: (line: string) => void): Promise<EngineServer> {
  const server = new grpc.Server(SERVER_OPTIONS);
  const secret = 'secret' in on ? on.secret : null;
  const verifier = secret ? new CallVerifier(secret) : null;
  const logged = new Map<string, number>();

  /** Checks the caller's proof and answers it; false (the call already refused) when it fails. */
  function admitted(call: grpc.ServerUnaryCall<unknown, unknown>, method: string, callback: grpc.sendUnaryData<unknown>): boolean {
    if (!verifier) return true;
    const verdict = verifier.check(call.metadata, method);
    if ('refused' in verdict) {
      const key = `${call.getPeer()} ${verdict.refused}`;
      if (Date.now() - (logged.get(key) ?? 0) > REFUSAL_LOG_MS) {
        logged.set(key, Date.now());
        log(`engine: refused ${call.getPeer()}: ${verdict.refused}`);
      }
      callback({ code: grpc.status.UNAUTHENTICATED, details: verdict.refused });
      return false;
    }
    const headers = new grpc.Metadata();
    answerCall(headers, secret!, verdict.nonce);
    call.sendMetadata(headers);
    return true;
  }

  const path = (name: string): string => `/${ENGINE_SERVICE}/${name}`;
  server.addService(EngineClient.service, {
    info: (call: grpc.ServerUnaryCall<unknown, unknown>, callback: grpc.sendUnaryData<unknown>) => {
      if (!admitted(call, path('Info'), callback)) return;
      engine.info().then(
        (info: EngineInfo) => callback(null, { factsJson: JSON.stringify(info) }),
        (err: unknown) => callback(errorStatus(err)),
      );
    },
    stats: (call: grpc.ServerUnaryCall<unknown, unknown>, callback: grpc.sendUnaryData<unknown>) => {
      if (!admitted(call, path('Stats'), callback)) return;
      try {
        callback(null, { statsJson: JSON.stringify(engine.stats()) });
      } catch (err) {
        callback(errorStatus(err));
      }
    },
    score: (call: grpc.ServerUnaryCall<ScoreMessage, unknown>, callback: grpc.sendUnaryData<unknown>) => {
      if (!admitted(call, path('Score'), callback)) return;
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

  let address: string;
  if ('path' in on) {
    await bind(server, `unix:${on.path}`, grpc.ServerCredentials.createInsecure());
    // The directory is private already; the socket is made so too.
    fs.chmodSync(on.path, 0o600);
    address = on.path;
  } else {
    const credentials = on.tls
      ? grpc.ServerCredentials.createSsl(null, [{ cert_chain: on.tls.cert, private_key: on.tls.key }], false)
      : grpc.ServerCredentials.createInsecure();
    const port = await bind(server, hostPort(on.host, on.port), credentials);
    address = formatEngineAddress(on.host, port, Boolean(on.tls));
  }
  return {
    address,
    close: () =>
      new Promise<void>((resolve) => {
        // Calls in flight are cut: their callers learn the engine went away, as when it dies.
        server.forceShutdown();
        resolve();
      }),
  };
}

function bind(server: grpc.Server, target: string, credentials: grpc.ServerCredentials): Promise<number> {
  return new Promise((resolve, reject) => server.bindAsync(target, credentials, (err, port) => (err ? reject(err) : resolve(port))));
}
