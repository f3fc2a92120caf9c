// The engine as seen from an HTTP worker: scoring requests go straight to the engine process's
// socket (socket.ts); the primary's status broadcasts say whether the engine is loading, ready or
// down, and where its socket is. A worker that cannot connect to that socket, or whose request is
// too large for a frame, sends the request through the primary instead, as every request once went.
import { ENGINE_CH, isEngineMessage, type EngineStatus, type WorkerEngineMessage } from './ipc.js';
import { connectEngineSocket, type EngineSocket } from './socket.js';
import { cancelledError, EngineError, type EngineInfo, type EngineService, type TextScoreRequest, type TextScoreResult } from './types.js';
import { FrameError } from './wire.js';

export interface EngineClient extends EngineService {
  status(): EngineStatus;
}

export function connectEngine(log: (line: string) => void): EngineClient {
  if (!process.send) throw new Error('connectEngine() needs an IPC channel to the cluster primary');
  let status: EngineStatus = 'loading';
  let info: EngineInfo | undefined;
  let message: string | undefined;
  let socketPath: string | undefined;
  /** The connection to socketPath; null inside when it could not be made (the relay takes over). */
  let direct: Promise<EngineSocket | null> | null = null;
  let nextId = 1;
  const waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();

  function open(file: string): Promise<EngineSocket | null> {
    return connectEngineSocket(file).catch((err: Error) => {
      log(`engine socket ${file} unreachable (${err.message}); scoring requests go through the primary`);
      return null;
    });
  }

  process.on('message', (msg: unknown) => {
    if (!isEngineMessage(msg)) return;
    if (msg.type === 'status') {
      status = msg.status;
      info = msg.info ?? info;
      message = msg.message;
      if (msg.socket !== socketPath) {
        // A new engine process (or none): the old connection, if any, is to one that died.
        void direct?.then((conn) => conn?.close());
        socketPath = msg.socket;
        direct = socketPath ? open(socketPath) : null;
      }
    } else if (msg.type === 'response') {
      const w = waiting.get(msg.id);
      if (!w) return;
      if (msg.ok) w.resolve(msg.result);
      else w.reject(new EngineError(msg.error.code, msg.error.message, msg.error.details ?? {}));
    }
  });

  const unavailable = (): EngineError =>
    new EngineError('unavailable', message ?? (status === 'loading' ? 'the model is still loading' : 'the engine is not running'));

  // No timer of its own, on either path: the request's deadline and its client's disconnect abort
  // `signal`, and an engine process that dies fails every request it held. A second, shorter clock
  // here once cut long requests off with a 503 while the engine was still working on them.
  function relay(payload: TextScoreRequest, signal?: AbortSignal): Promise<TextScoreResult> {
    const id = nextId++;
    return new Promise<TextScoreResult>((resolve, reject) => {
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
          resolve(v as TextScoreResult);
        },
        reject: (e) => {
          settle();
          reject(e);
        },
      });
      process.send!({ ch: ENGINE_CH, type: 'request', id, op: 'score', payload } satisfies WorkerEngineMessage);
    });
  }

  async function scoreText(request: TextScoreRequest, signal?: AbortSignal): Promise<TextScoreResult> {
    if (status !== 'ready') throw unavailable();
    if (signal?.aborted) throw cancelledError();
    const pending = direct;
    let conn = await pending;
    // The engine closed this connection (it only does so on a framing error, or by dying): one new
    // try; if the engine is gone the relay answers `unavailable` until the primary says otherwise.
    if (conn?.closed && socketPath) {
      if (direct === pending) direct = open(socketPath);
      conn = await direct;
    }
    if (signal?.aborted) throw cancelledError();
    if (conn) {
      try {
        return await conn.score(request, signal);
      } catch (err) {
        if (!(err instanceof FrameError)) throw err;
      }
    }
    return relay(request, signal);
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
    scoreText,
  };
}
