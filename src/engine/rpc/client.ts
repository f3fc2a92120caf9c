// A channel to one engine, whatever its transport: the private Unix socket of a local engine, or
// TCP (TLS) to an engine node with every call proving the shared secret over its message and every
// reply checked for the engine's proof over its own (auth.ts) before it is believed. One rule for
// every caller (HTTP workers, the primary, API nodes): a scoring call carries the request's
// deadline, a signal that aborts cancels it, and an engine that is not there (dead, restarting,
// unreachable) or cannot prove its reply fails it with `unavailable` at once or, mid-call, when its
// connection goes. gRPC's keepalive notices a peer that vanished without closing the connection.
import * as grpc from '@grpc/grpc-js';
import { bodyHash, NAME_TRAILER, replyProved, signCall } from './auth.js';
import { grpcTarget, parseEngineAddress } from './address.js';
import {
  callError,
  EngineClient,
  ENGINE_SERVICE,
  ERROR_TRAILER,
  HealthClient,
  MAX_MESSAGE_BYTES,
  parseJson,
  scoreMessage,
  scoreResult,
  type ScoreReplyMessage,
} from './codec.js';
import { cancelledError, EngineError, type EngineInfo, type EngineStats, type TextScoreRequest, type TextScoreResult } from '../types.js';

export interface ChannelOptions {
  /** ARBITRA_ENGINE_SECRET: required for tcp:// and tls:// engines. */
  secret?: string;
  /** A private certificate authority for tls:// engines (the system's are trusted without it). */
  ca?: Buffer;
}

export interface EngineChannel {
  readonly address: string;
  info(timeoutMs: number): Promise<EngineInfo>;
  /** Rejects with `cancelled` once `signal` aborts, `deadline_exceeded` past request.deadlineMs, `unavailable` when the engine is not there. */
  score(request: TextScoreRequest, signal?: AbortSignal): Promise<TextScoreResult>;
  stats(timeoutMs: number): Promise<EngineStats>;
  /** The standard health check: false while the engine says NOT_SERVING. */
  serving(timeoutMs: number): Promise<boolean>;
  close(): void;
}

const CHANNEL_OPTIONS: grpc.ChannelOptions = {
  'grpc.max_receive_message_length': MAX_MESSAGE_BYTES,
  'grpc.max_send_message_length': MAX_MESSAGE_BYTES,
  'grpc.keepalive_time_ms': 10_000,
  'grpc.keepalive_timeout_ms': 5_000,
  'grpc.keepalive_permit_without_calls': 1,
  // A restarted engine is found again within a second or two of listening.
  'grpc.initial_reconnect_backoff_ms': 100,
  'grpc.max_reconnect_backoff_ms': 2_000,
  // A scoring call that failed is placed again by the caller (another engine may take it), never
  // silently repeated here.
  'grpc.enable_retries': 0,
};

type Method = grpc.MethodDefinition<unknown, unknown>;
const bytesAsTheyAre = (bytes: Buffer): Buffer => bytes;
const ENGINE_METHODS = EngineClient.service;
const HEALTH_CHECK = HealthClient.service.Check!;

function impostor(): EngineError {
  return new EngineError('unavailable', 'the engine could not prove its reply: an engine without the shared secret, or a reply altered on the way');
}

export function openEngineChannel(address: string, opts: ChannelOptions = {}): EngineChannel {
  const where = parseEngineAddress(address);
  const secret = 'path' in where ? null : (opts.secret ?? null);
  if (!('path' in where) && !secret) throw new Error(`the engine at ${address} needs ARBITRA_ENGINE_SECRET`);
  const credentials = 'path' in where || !where.tls ? grpc.credentials.createInsecure() : grpc.credentials.createSsl(opts.ca ?? null);
  const engine = new EngineClient(grpcTarget(where), credentials, CHANNEL_OPTIONS);
  // Shares the engine client's channel, so a health check travels the same connection as the work.
  const health = new HealthClient(grpcTarget(where), credentials, { ...CHANNEL_OPTIONS, channelOverride: engine.getChannel() });
  /** The engine's name as it last said it: its start's, until it restarts (auth.ts). */
  let engineName = '';

  /**
   * A unary call with its message as bytes; on TCP a `signed` one proves the secret over those bytes
   * to the engine named `engineName`, and its reply is taken only with the engine's proof over it.
   */
  function call<R>(client: grpc.Client, method: Method, message: unknown, deadline: number, signed: boolean, signal?: AbortSignal): Promise<R> {
    const bytes = method.requestSerialize(message);
    if (bytes.length > MAX_MESSAGE_BYTES) {
      return Promise.reject(
        new EngineError(
          'context_exceeded',
          `the request is ${(bytes.length / 2 ** 20).toFixed(0)} MiB, more than an engine takes (${MAX_MESSAGE_BYTES / 2 ** 20} MiB); no model's context holds it`,
        ),
      );
    }
    const proving = signed ? secret : null;
    const attempt = (named: string, again: boolean): Promise<R> =>
      new Promise<R>((resolve, reject) => {
        if (signal?.aborted) return reject(cancelledError());
        const metadata = new grpc.Metadata();
        const nonce = proving === null ? null : signCall(metadata, proving, { method: method.path, engine: named, body: bytes });
        let abandoned = false;
        let outcome: { err: grpc.ServiceError | null; reply?: Buffer } = { err: null };
        const onAbort = (): void => {
          abandoned = true;
          pending.cancel();
        };
        const pending = client.makeUnaryRequest(method.path, bytesAsTheyAre, bytesAsTheyAre, bytes, metadata, { deadline }, (err, reply) => {
          outcome = { err, reply };
        });
        // Emitted just after the callback, with the trailers that carry the engine's proof.
        pending.on('status', (status: grpc.StatusObject) => {
          signal?.removeEventListener('abort', onAbort);
          const { err, reply } = outcome;
          const said = status.metadata.get(NAME_TRAILER)[0];
          if (nonce !== null && err?.code === grpc.status.UNAUTHENTICATED && typeof said === 'string' && said !== named && !again) {
            // The engine proved nothing yet, and read nothing: the call is made again for the name it gave.
            engineName = said;
            attempt(said, true).then(resolve, reject);
            return;
          }
          const error = status.metadata.get(ERROR_TRAILER)[0];
          if (nonce !== null) {
            const proved = replyProved(status.metadata, proving!, {
              nonce,
              engine: named,
              code: status.code,
              body: bodyHash(err ? null : (reply ?? null)),
              error: typeof error === 'string' ? error : '',
            });
            // A score, or an engine's own refusal, counts only with its proof; the rest (the call's
            // fate on the way) is the same whoever says it.
            if (!proved && (!err || typeof error === 'string')) return reject(impostor());
          }
          if (err) return reject(callError(err, abandoned));
          try {
            resolve(method.responseDeserialize(reply!) as R);
          } catch {
            reject(new EngineError('internal', `the engine sent a reply to ${method.path} that does not decode`));
          }
        });
        signal?.addEventListener('abort', onAbort, { once: true });
      });
    return attempt(engineName, false);
  }

  const within = (ms: number): number => Date.now() + ms;

  return {
    address,
    async info(timeoutMs) {
      const reply = await call<{ factsJson: string }>(engine, ENGINE_METHODS.Info!, {}, within(timeoutMs), true);
      return parseJson<EngineInfo>(reply.factsJson, 'facts');
    },
    async score(request, signal) {
      const deadline = request.deadlineMs === undefined ? Infinity : within(request.deadlineMs);
      return scoreResult(await call<ScoreReplyMessage>(engine, ENGINE_METHODS.Score!, scoreMessage(request), deadline, true, signal));
    },
    async stats(timeoutMs) {
      const reply = await call<{ statsJson: string }>(engine, ENGINE_METHODS.Stats!, {}, within(timeoutMs), true);
      return parseJson<EngineStats>(reply.statsJson, 'counters');
    },
    async serving(timeoutMs) {
      const reply = await call<{ status: string }>(health, HEALTH_CHECK, { service: ENGINE_SERVICE }, within(timeoutMs), false);
      return reply.status === 'SERVING';
    },
    close() {
      engine.close();
    },
  };
}
