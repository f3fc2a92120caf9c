// The engine service's messages (engine.proto) and how our types cross them: a scoring request and
// its result, the engine's facts and counters, and an EngineError as a gRPC status with its code,
// message and details in the trailer `arbitra-error`. Both ends of every engine call use these.
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { packageRoot } from '../../paths.js';
import { cancelledError, EngineError, type EngineErrorCode, type TextScoreRequest, type TextScoreResult } from '../types.js';

/**
 * The largest message either end reads, and only from a caller that proved the secret: an engine
 * reads nothing of an unproven call (guard.ts). A scoring request is a decision's state once and
 * each question once per debias pass (8 at most): about 9 times its body, so under 10 MiB at the
 * default 1 MiB body limit; 64 MiB holds bodies of 7 MiB, whose state no model's context holds.
 * The client refuses a larger request before sending it, as context_exceeded.
 */
export const MAX_MESSAGE_BYTES = 64 * 1024 * 1024;
export const ERROR_TRAILER = 'arbitra-error';
/** The engine's service name, as the health protocol is asked about it. */
export const ENGINE_SERVICE = 'arbitra.engine.v1.Engine';

const protos = ['engine.proto', 'health.proto'].map((f) => path.join(packageRoot(), 'src', 'engine', 'rpc', f));
const definition = protoLoader.loadSync(protos, { keepCase: false, longs: Number, enums: String, defaults: true, oneofs: true });
const loaded = grpc.loadPackageDefinition(definition) as unknown as {
  arbitra: { engine: { v1: { Engine: grpc.ServiceClientConstructor } } };
  grpc: { health: { v1: { Health: grpc.ServiceClientConstructor } } };
};
export const EngineClient = loaded.arbitra.engine.v1.Engine;
export const HealthClient = loaded.grpc.health.v1.Health;

/** ScoreRequest as proto-loader reads and writes it (camelCase, unset optional fields absent). */
export interface ScoreMessage {
  system?: string;
  prefix: string;
  branches: { suffix: string; answers: { tokens: number[] }[] }[];
  maxPromptTokens: number;
  tenant: string;
  maxRequestTokens: number;
  admitByCost: boolean;
  background: boolean;
  cacheScope: string;
}

export interface ScoreReplyMessage {
  branches: { values: number[] }[];
  promptTokens: number;
  prefixTokens: number;
  evaluatedTokens: number;
  cachedTokens: number;
}

export function scoreMessage(request: TextScoreRequest): ScoreMessage {
  return {
    ...(request.system === null ? {} : { system: request.system }),
    prefix: request.prefix,
    branches: request.branches.map((b) => ({ suffix: b.suffix, answers: b.answers.map((tokens) => ({ tokens })) })),
    maxPromptTokens: request.maxPromptTokens,
    tenant: request.tenant ?? '',
    maxRequestTokens: request.maxRequestTokens ?? 0,
    admitByCost: request.admitByCost ?? false,
    background: request.background ?? false,
    cacheScope: request.cacheScope ?? '',
  };
}

/** The request as the engine takes it; `deadline` is the call's (epoch ms, Infinity for none). */
export function scoreRequest(msg: ScoreMessage, deadline: number): TextScoreRequest {
  return {
    system: msg.system ?? null,
    prefix: msg.prefix,
    branches: msg.branches.map((b) => ({ suffix: b.suffix, answers: b.answers.map((a) => a.tokens) })),
    maxPromptTokens: msg.maxPromptTokens,
    ...(msg.tenant ? { tenant: msg.tenant } : {}),
    ...(Number.isFinite(deadline) ? { deadlineMs: Math.max(0, deadline - Date.now()) } : {}),
    ...(msg.admitByCost ? { admitByCost: true } : {}),
    ...(msg.maxRequestTokens ? { maxRequestTokens: msg.maxRequestTokens } : {}),
    ...(msg.background ? { background: true } : {}),
    ...(msg.cacheScope ? { cacheScope: msg.cacheScope } : {}),
  };
}

export function replyMessage(result: TextScoreResult): ScoreReplyMessage {
  const { branches, ...counts } = result;
  return { branches: branches.map((values) => ({ values })), ...counts };
}

export function scoreResult(msg: ScoreReplyMessage): TextScoreResult {
  return {
    branches: msg.branches.map((r) => r.values),
    promptTokens: msg.promptTokens,
    prefixTokens: msg.prefixTokens,
    evaluatedTokens: msg.evaluatedTokens,
    cachedTokens: msg.cachedTokens,
  };
}

// Each refusal under the gRPC code a generic client or proxy reads it by, so that, say, `busy` is
// retried as RESOURCE_EXHAUSTED is; the trailer keeps our own code and its details exactly.
const STATUS_OF: Record<EngineErrorCode, grpc.status> = {
  context_exceeded: grpc.status.INVALID_ARGUMENT,
  invalid_request: grpc.status.INVALID_ARGUMENT,
  too_costly: grpc.status.FAILED_PRECONDITION,
  busy: grpc.status.RESOURCE_EXHAUSTED,
  load_failed: grpc.status.UNAVAILABLE,
  unavailable: grpc.status.UNAVAILABLE,
  closed: grpc.status.UNAVAILABLE,
  cancelled: grpc.status.CANCELLED,
  deadline_exceeded: grpc.status.DEADLINE_EXCEEDED,
  internal: grpc.status.INTERNAL,
};

/** An engine's failure as the status it answers a call with. */
export function errorStatus(err: unknown): Partial<grpc.StatusObject> {
  const e = err instanceof EngineError ? err : new EngineError('internal', (err as Error).message);
  const metadata = new grpc.Metadata();
  metadata.set(ERROR_TRAILER, JSON.stringify({ code: e.code, message: e.message, details: e.details }));
  return { code: STATUS_OF[e.code], details: e.message, metadata };
}

/**
 * What a failed call means to the caller. The engine's own refusals arrive whole; the rest is the
 * call's fate: cancelled by the caller (`abandoned`), past its deadline, or an engine that is not
 * there (any transport failure: the process died or shut down, its socket is gone, the node is
 * unreachable).
 */
export function callError(err: grpc.ServiceError, abandoned: boolean): EngineError {
  const trailer = err.metadata?.get(ERROR_TRAILER)[0];
  if (typeof trailer === 'string') {
    try {
      const { code, message, details } = JSON.parse(trailer) as { code: EngineErrorCode; message: string; details?: Record<string, unknown> };
      if (code in STATUS_OF) return new EngineError(code, message, details ?? {});
    } catch {
      // Not our trailer: the call fails by its status alone.
    }
  }
  if (abandoned) return cancelledError();
  if (err.code === grpc.status.DEADLINE_EXCEEDED) return new EngineError('deadline_exceeded', 'the engine did not answer before the request deadline');
  if (err.code === grpc.status.UNAUTHENTICATED) return new EngineError('unavailable', `the engine refused this node: ${err.details}`);
  // Cancelled but not by its caller: the engine shut down with the call in hand.
  if (err.code === grpc.status.UNAVAILABLE || err.code === grpc.status.CANCELLED) {
    return new EngineError('unavailable', 'the engine is not reachable or stopped while answering; retry shortly');
  }
  return new EngineError('internal', `engine call failed: ${err.details || grpc.status[err.code]}`);
}

export function parseJson<T>(text: string, what: string): T {
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new EngineError('internal', `the engine sent ${what} that is not JSON`);
  }
}
