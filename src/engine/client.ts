// The engine as seen from an HTTP worker: requests go to the primary over IPC; the primary's
// status broadcasts say whether the engine is loading, ready or down.
import { ENGINE_CH, isEngineMessage, type EngineOp, type EngineStatus, type WorkerEngineMessage } from './ipc.js';
import { cancelledError, EngineError, type EngineInfo, type EngineService, type TextScoreRequest, type TextScoreResult } from './types.js';

// A guard against an engine that stopped answering, not a deadline: a long prompt legitimately
// takes minutes on CPU (a 30,000-token state about three on two cores), so the allowance grows with
// the text to score.
const REQUEST_TIMEOUT_MS = 120_000;
const TIMEOUT_MS_PER_CHARACTER = 5;

/** How long a scoring request may take before the engine is presumed stuck. */
export function requestTimeoutMs(request: TextScoreRequest): number {
  const characters = (request.system?.length ?? 0) + request.prefix.length + request.branches.reduce((n, b) => n + b.suffix.length, 0);
  return REQUEST_TIMEOUT_MS + TIMEOUT_MS_PER_CHARACTER * characters;
}

export interface EngineClient extends EngineService {
  status(): EngineStatus;
}

export function connectEngine(): EngineClient {
  if (!process.send) throw new Error('connectEngine() needs an IPC channel to the cluster primary');
  let status: EngineStatus = 'loading';
  let info: EngineInfo | undefined;
  let message: string | undefined;
  let nextId = 1;
  const waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();

  process.on('message', (msg: unknown) => {
    if (!isEngineMessage(msg)) return;
    if (msg.type === 'status') {
      status = msg.status;
      info = msg.info ?? info;
      message = msg.message;
    } else if (msg.type === 'response') {
      const w = waiting.get(msg.id);
      if (!w) return;
      if (msg.ok) w.resolve(msg.result);
      else w.reject(new EngineError(msg.error.code, msg.error.message, msg.error.details ?? {}));
    }
  });

  const unavailable = (): EngineError =>
    new EngineError('unavailable', message ?? (status === 'loading' ? 'the model is still loading' : 'the engine is not running'));

  function call<T>(op: EngineOp, timeoutMs: number, signal?: AbortSignal): Promise<T> {
    if (status !== 'ready') return Promise.reject(unavailable());
    if (signal?.aborted) return Promise.reject(cancelledError());
    const id = nextId++;
    return new Promise<T>((resolve, reject) => {
      // Work nobody waits for any more is dropped in the engine, whichever way the wait ended.
      const stop = (err: EngineError): void => {
        settle();
        reject(err);
        process.send!({ ch: ENGINE_CH, type: 'cancel', id } satisfies WorkerEngineMessage);
      };
      const onAbort = (): void => stop(cancelledError());
      const timer = setTimeout(() => stop(new EngineError('unavailable', 'the engine did not answer in time')), timeoutMs);
      timer.unref();
      const settle = (): void => {
        waiting.delete(id);
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      waiting.set(id, {
        resolve: (v) => {
          settle();
          resolve(v as T);
        },
        reject: (e) => {
          settle();
          reject(e);
        },
      });
      process.send!({ ch: ENGINE_CH, type: 'request', id, ...op } satisfies WorkerEngineMessage);
    });
  }

  // The primary's status broadcasts reach only workers already listening; a worker started (or
  // restarted) after the engine came up asks once.
  process.send({ ch: ENGINE_CH, type: 'subscribe' } satisfies WorkerEngineMessage);

  return {
    status: () => status,
    info: async () => {
      if (status !== 'ready' || !info) throw unavailable();
      return info;
    },
    scoreText: (request: TextScoreRequest, signal?: AbortSignal) => call<TextScoreResult>({ op: 'score', payload: request }, requestTimeoutMs(request), signal),
  };
}
