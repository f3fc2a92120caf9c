// Messages of the engine channel. The primary forks the engine processes (one per GPU with
// `--gpus`) and tells the workers, in its status broadcasts, whether each is up and where its socket
// is (socket.ts): workers send their scoring requests there directly. When a worker cannot reach a
// socket it sends them to the primary instead (`ch: 'engine'`), naming the engine, and the primary
// relays them, and their `cancel`, to that engine process.
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
  | { ch: typeof ENGINE_CH; type: 'request'; engine: number; id: number; op: 'score'; payload: TextScoreRequest }
  | { ch: typeof ENGINE_CH; type: 'cancel'; engine: number; id: number }
  | { ch: typeof ENGINE_CH; type: 'subscribe' }
  | ({ ch: typeof ENGINE_CH } & EngineResponse)
  | ({ ch: typeof ENGINE_CH; type: 'status' } & EngineState & { info?: EngineInfo; socket?: string; message?: string });

/**
 * One engine of the service: `id` is its place in the list (0 when there is one), `device` the GPU
 * it was started on (`--gpus`), null when it was given every device the build sees.
 */
export interface EngineState {
  engine: number;
  device: number | null;
  status: EngineStatus;
}

/** The service's status over its engines: ready while any engine is. */
export function serviceStatus(engines: readonly EngineState[]): EngineStatus {
  if (engines.some((e) => e.status === 'ready')) return 'ready';
  return engines.some((e) => e.status === 'loading') ? 'loading' : 'down';
}

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
