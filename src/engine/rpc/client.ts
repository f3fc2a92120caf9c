// A channel to one engine, whatever its transport: the private Unix socket of a local engine, or
// TCP (TLS) to an engine node with every call proving the shared secret and checking the engine's
// proof. One rule for every caller (HTTP workers, the primary, API nodes): a scoring call carries
// the request's deadline, a signal that aborts cancels it, and an engine that is not there (dead,
// restarting, unreachable) fails it with `unavailable` at once or, mid-call, when its connection
// goes. gRPC's keepalive notices a peer that vanished without closing the connection.
import * as grpc from '@grpc/grpc-js';
import { engineProved, signCall } from './auth.js';
import { grpcTarget, parseEngineAddress } from './address.js';
import {
  callError,
  EngineClient,
  ENGINE_SERVICE,
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

type Unary = (
  message: unknown,
  metadata: grpc.Metadata,
  options: grpc.CallOptions,
  callback: (err: grpc.ServiceError | null, reply: unknown) => void,
) => grpc.ClientUnaryCall;

export function openEngineChannel(address: string, opts: ChannelOptions = {}): EngineChannel {
  const where = parseEngineAddress(address);
  const secret = 'path' in where ? null : (opts.secret ?? null);
  if (!('path' in where) && !secret) throw new Error(`the engine at ${address} needs ARBITRA_ENGINE_SECRET`);
  const credentials = 'path' in where || !where.tls ? grpc.credentials.createInsecure() : grpc.credentials.createSsl(opts.ca ?? null);
  const engine = new EngineClient(grpcTarget(where), credentials, CHANNEL_OPTIONS);
  // Shares the engine client's channel, so a health check travels the same connection as the work.
  const health = new HealthClient(grpcTarget(where), credentials, { ...CHANNEL_OPTIONS, channelOverride: engine.getChannel() });

  /** A unary call; `signed` ones prove the secret to a TCP engine and need its proof back. */
  function call<R>(client: grpc.Client, method: string, path: string, message: unknown, deadline: number, signed: boolean, signal?: AbortSignal): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      if (signal?.aborted) return reject(cancelledError());
      const metadata = new grpc.Metadata();
      const nonce = secret && signed ? signCall(metadata, secret, path) : null;
      let proved: boolean | null = null;
      let abandoned = false;
      const impostor = (): EngineError => new EngineError('unavailable', 'the engine could not prove the shared secret');
      const onAbort = (): void => {
        abandoned = true;
        pending.cancel();
      };
      const pending = (client as unknown as Record<string, Unary>)[method]!.call(client, message, metadata, { deadline }, (err, reply) => {
        signal?.removeEventListener('abort', onAbort);
        if (err && proved === false && err.code === grpc.status.CANCELLED) return reject(impostor());
        if (err) return reject(callError(err, abandoned));
        if (nonce !== null && proved !== true) return reject(impostor());
        resolve(reply as R);
      });
      if (nonce !== null) {
        // An answer counts only from an engine that proved the secret in its response headers.
        pending.on('metadata', (headers: grpc.Metadata) => {
          proved = engineProved(headers, secret!, nonce);
          if (!proved) pending.cancel();
        });
      }
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  const within = (ms: number): number => Date.now() + ms;
  const path = (name: string): string => `/${ENGINE_SERVICE}/${name}`;

  return {
    address,
    async info(timeoutMs) {
      const reply = await call<{ factsJson: string }>(engine, 'info', path('Info'), {}, within(timeoutMs), true);
      return parseJson<EngineInfo>(reply.factsJson, 'facts');
    },
    async score(request, signal) {
      const deadline = request.deadlineMs === undefined ? Infinity : within(request.deadlineMs);
      return scoreResult(await call<ScoreReplyMessage>(engine, 'score', path('Score'), scoreMessage(request), deadline, true, signal));
    },
    async stats(timeoutMs) {
      const reply = await call<{ statsJson: string }>(engine, 'stats', path('Stats'), {}, within(timeoutMs), true);
      return parseJson<EngineStats>(reply.statsJson, 'counters');
    },
    async serving(timeoutMs) {
      const reply = await call<{ status: string }>(health, 'check', '/grpc.health.v1.Health/Check', { service: ENGINE_SERVICE }, within(timeoutMs), false);
      return reply.status === 'SERVING';
    },
    close() {
      engine.close();
    },
  };
}
