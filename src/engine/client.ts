// The engine as seen from an HTTP worker: requests go to the primary over IPC; the primary's
// status broadcasts say whether the engine is loading, ready or down.
import { ENGINE_CH, isEngineMessage, type EngineOp, type EngineStatus, type WorkerEngineMessage } from './ipc.js';
import { EngineError, type EngineInfo, type EngineService, type TextScoreRequest, type TextScoreResult } from './types.js';

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
  const waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void; timer: NodeJS.Timeout }>();

  process.on('message', (msg: unknown) => {
    if (!isEngineMessage(msg)) return;
    if (msg.type === 'status') {
      status = msg.status;
      info = msg.info ?? info;
      message = msg.message;
    } else if (msg.type === 'response') {
      const w = waiting.get(msg.id);
      if (!w) return;
      waiting.delete(msg.id);
      clearTimeout(w.timer);
      if (msg.ok) w.resolve(msg.result);
      else w.reject(new EngineError(msg.error.code, msg.error.message, msg.error.details ?? {}));
    }
  });

  const unavailable = (): EngineError =>
    new EngineError('unavailable', message ?? (status === 'loading' ? 'the model is still loading' : 'the engine is not running'));

  function call<T>(op: EngineOp, timeoutMs: number): Promise<T> {
    if (status !== 'ready') return Promise.reject(unavailable());
    const id = nextId++;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        waiting.delete(id);
        reject(new EngineError('unavailable', 'the engine did not answer in time'));
      }, timeoutMs);
      timer.unref();
      waiting.set(id, { resolve: resolve as (v: unknown) => void, reject, timer });
      process.send!({ ch: ENGINE_CH, type: 'request', id, ...op } satisfies WorkerEngineMessage);
    });
  }

  return {
    status: () => status,
    info: async () => {
      if (status !== 'ready' || !info) throw unavailable();
      return info;
    },
    scoreText: (request: TextScoreRequest) => call<TextScoreResult>({ op: 'score', payload: request }, requestTimeoutMs(request)),
  };
}
