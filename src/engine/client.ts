// The engine as seen from an HTTP worker: requests go to the primary over IPC; the primary's
// status broadcasts say whether the engine is loading, ready or down.
import { ENGINE_CH, isEngineMessage, type EngineOp, type EngineStatus, type WorkerEngineMessage } from './ipc.js';
import { cancelledError, EngineError, type EngineInfo, type EngineService, type TextScoreRequest, type TextScoreResult } from './types.js';

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

  // No timer of its own: the request's deadline and its client's disconnect abort `signal`, and an
  // engine process that dies fails every request it held. A second, shorter clock here once cut
  // long requests off with a 503 while the engine was still working on them.
  function call<T>(op: EngineOp, signal?: AbortSignal): Promise<T> {
    if (status !== 'ready') return Promise.reject(unavailable());
    if (signal?.aborted) return Promise.reject(cancelledError());
    const id = nextId++;
    return new Promise<T>((resolve, reject) => {
      // Work nobody waits for any more is dropped in the engine.
      const onAbort = (): void => {
        settle();
        reject(cancelledError());
        process.send!({ ch: ENGINE_CH, type: 'cancel', id } satisfies WorkerEngineMessage);
      };
      const settle = (): void => {
        waiting.delete(id);
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
    scoreText: (request: TextScoreRequest, signal?: AbortSignal) => call<TextScoreResult>({ op: 'score', payload: request }, signal),
  };
}
