// Messages of the engine channel. The primary forks the engine process and tells the workers, in
// its status broadcasts, whether it is up and where its socket is (socket.ts): workers send their
// scoring requests there directly. When a worker cannot reach that socket it sends them to the
// primary instead (`ch: 'engine'`), which relays them, and their `cancel`, to the engine process.
import { EngineError, type EngineErrorCode, type EngineInfo, type TextScoreRequest } from './types.js';

export const ENGINE_CH = 'engine';
/** Environment variable carrying the engine process's model path and options (JSON). */
export const ENGINE_CONFIG_ENV = 'ARBITRA_ENGINE_CONFIG';

export type EngineStatus = 'loading' | 'ready' | 'down';

export type EngineOp = { op: 'score'; payload: TextScoreRequest } | { op: 'stats' };

export interface WireError {
  code: EngineErrorCode;
  message: string;
  details?: Record<string, unknown>;
}

export function wireError(err: unknown): WireError {
  if (err instanceof EngineError) return { code: err.code, message: err.message, details: err.details };
  return { code: 'internal', message: (err as Error).message };
}

export type EngineResponse = { type: 'response'; id: number; ok: true; result: unknown } | { type: 'response'; id: number; ok: false; error: WireError };

/**
 * Worker <-> primary. A worker asks for the status when it starts: a broadcast sent before it
 * listened is lost. `socket` is the engine's, set while it is ready (absent where it has none).
 */
export type WorkerEngineMessage =
  | { ch: typeof ENGINE_CH; type: 'request'; id: number; op: 'score'; payload: TextScoreRequest }
  | { ch: typeof ENGINE_CH; type: 'cancel'; id: number }
  | { ch: typeof ENGINE_CH; type: 'subscribe' }
  | ({ ch: typeof ENGINE_CH } & EngineResponse)
  | { ch: typeof ENGINE_CH; type: 'status'; status: EngineStatus; info?: EngineInfo; socket?: string; message?: string };

/** Primary <-> engine process. */
export type ProcessEngineMessage =
  | ({ type: 'request'; id: number } & EngineOp)
  | { type: 'cancel'; id: number }
  | EngineResponse
  | { type: 'ready'; info: EngineInfo; socket?: string }
  | { type: 'failed'; error: WireError };

export function isEngineMessage(msg: unknown): msg is WorkerEngineMessage {
  return typeof msg === 'object' && msg !== null && (msg as { ch?: unknown }).ch === ENGINE_CH;
}
