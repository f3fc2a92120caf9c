// The engine service's guard on TCP: a gRPC server interceptor that checks each call's proof
// (auth.ts) from its metadata, before the call's message is read: a caller that fails is refused
// with UNAUTHENTICATED and its connection closed (port.ts), so not one byte of its message is read,
// whatever size it announces. An address that failed too often is refused before its proof is
// checked (throttle.ts). The message of an admitted call is read (up to codec.ts's
// MAX_MESSAGE_BYTES) and hashed against its proof before it is decoded; every reply of an admitted
// call goes out with the engine's proof over its bytes. The health service passes unguarded: a
// probe carries no secret.
//
// The Engine service is registered with byte-for-byte (de)serializers (`guardedService`): the guard
// decodes a request once its hash holds and encodes a reply to hash it, with the service's own.
import * as grpc from '@grpc/grpc-js';
import { bodyHash, CallVerifier, NAME_TRAILER, signReply, type Admission } from './auth.js';
import { ERROR_TRAILER } from './codec.js';
import type { EnginePort, Peer } from './port.js';
import { addressBlock } from '../../addresses.js';
import { FailureThrottle } from './throttle.js';

/** A refusal is logged once a minute per address and reason: a misconfigured node retries every few seconds. */
const REFUSAL_LOG_MS = 60_000;
/** Distinct (address, reason) pairs logged in a minute; past it one line says so. */
const REFUSAL_LOG_CAPACITY = 256;

const raw = (bytes: Buffer): Buffer => bytes;

/** `service` with its messages passed as bytes: the guard decodes and encodes them. */
export function guardedService(service: grpc.ServiceDefinition): grpc.ServiceDefinition {
  return Object.fromEntries(Object.entries(service).map(([name, def]) => [name, { ...def, requestDeserialize: raw, responseSerialize: raw }]));
}

function refusalLog(log: (line: string) => void): (peer: string, address: string, why: string) => void {
  const last = new Map<string, number>();
  return (peer, address, why) => {
    const now = Date.now();
    for (const [key, at] of last) {
      if (now - at < REFUSAL_LOG_MS) break;
      last.delete(key);
    }
    const key = `${address} ${why}`;
    if (last.has(key)) return;
    if (last.size >= REFUSAL_LOG_CAPACITY) {
      if (!last.has('')) log(`engine: refusing calls from more than ${REFUSAL_LOG_CAPACITY} addresses or reasons this minute; not logging each`);
      last.set('', now);
      return;
    }
    last.set(key, now);
    log(`engine: refused ${peer}: ${why}`);
  };
}

export interface GuardOptions {
  secret: string;
  /** This engine's name (auth.ts's newEngineName). */
  name: string;
  /** The service as the client library knows it: what the guarded methods' bytes decode and encode with. */
  service: grpc.ServiceDefinition;
  port: Pick<EnginePort, 'proved' | 'cut'>;
  log: (line: string) => void;
}

export function engineGuard(opts: GuardOptions): grpc.ServerInterceptor {
  const verifier = new CallVerifier(opts.secret, opts.name);
  const throttle = new FailureThrottle();
  const noteRefusal = refusalLog(opts.log);
  const methods = new Map(Object.values(opts.service).map((def) => [def.path, def]));

  return (descriptor, call) => {
    const method = methods.get(descriptor.path);
    if (!method) return new grpc.ServerInterceptingCall(call);
    const peer: Peer = call.getConnectionInfo();
    const address = addressBlock(peer.remoteAddress ?? '');
    let admitted: Admission | null = null;
    let reply: Buffer | null = null;

    /**
     * Refuses the call, straight to the call beneath: a refusal carries no engine proof. `failed`:
     * its proof was wrong, which counts against its address; `cut`: its connection is closed, so
     * nothing more it sends is read; `logged`: the reason the log gives, null for none.
     */
    const refuse = (details: string, how: { failed: boolean; cut: boolean; logged?: string | null; trailers?: grpc.Metadata }): void => {
      if (how.logged !== null) noteRefusal(call.getPeer(), address, how.logged ?? details);
      if (how.failed) throttle.failed(address);
      call.sendStatus({ code: grpc.status.UNAUTHENTICATED, details, metadata: how.trailers ?? new grpc.Metadata() });
      if (how.cut) opts.port.cut(peer);
    };

    return new grpc.ServerInterceptingCall(call, {
      start: (next) =>
        next({
          onReceiveMetadata(metadata, next) {
            const wait = throttle.retryAfter(address);
            if (wait > 0) {
              return refuse(`too many failed proofs from ${address}; try again in ${wait} s`, {
                failed: false,
                cut: true,
                logged: 'too many failed proofs; refused unchecked',
              });
            }
            const verdict = verifier.check(metadata, descriptor.path);
            if ('refused' in verdict) {
              if (verdict.engine === undefined) return refuse(verdict.refused, { failed: verdict.failed, cut: verdict.failed });
              // An API node learning this engine's name (auth.ts): the protocol, not a fault to log.
              const trailers = new grpc.Metadata();
              trailers.set(NAME_TRAILER, verdict.engine);
              return refuse(verdict.refused, { failed: false, cut: false, logged: null, trailers });
            }
            admitted = verdict;
            opts.port.proved(peer);
            next(metadata);
          },
          onReceiveMessage(bytes: Buffer, next) {
            if (bodyHash(bytes) !== admitted!.body) return refuse('the message is not the one its proof covers', { failed: true, cut: true });
            let message: unknown;
            try {
              message = method.requestDeserialize(bytes);
            } catch {
              return call.sendStatus({ code: grpc.status.INVALID_ARGUMENT, details: `not a message of ${descriptor.path}` });
            }
            next(message);
          },
        }),
      sendMessage(message, next) {
        reply = method.responseSerialize(message);
        next(reply);
      },
      sendStatus(status, next) {
        if (!admitted) return next(status);
        const trailers = status.metadata?.clone() ?? new grpc.Metadata();
        const error = trailers.get(ERROR_TRAILER)[0];
        signReply(trailers, opts.secret, {
          nonce: admitted.nonce,
          engine: opts.name,
          code: status.code,
          body: bodyHash(status.code === grpc.status.OK ? reply : null),
          error: typeof error === 'string' ? error : '',
        });
        next({ ...status, metadata: trailers });
      },
    });
  };
}
