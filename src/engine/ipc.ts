// Messages of the engine channel. Workers talk to the primary (`ch: 'engine'`), the primary
// relays to the engine process; responses travel back the same way. A request's `cancel` follows
// the same path and stops its remaining work at the engine's next batch boundary.
import type { EngineErrorCode, EngineInfo, TextScoreRequest } from './types.js';

export const ENGINE_CH = 'engine';
/** Environment variable carrying the engine process's model path and options (JSON). */
export const ENGINE_CONFIG_ENV = 'ARBITRA_ENGINE_CONFIG';

export type EngineStatus = 'loading' | 'ready' | 'down';

export type EngineOp = { op: 'info' } | { op: 'score'; payload: TextScoreRequest } | { op: 'stats' };

export interface WireError {
  code: EngineErrorCode;
  message: string;
  details?: Record<string, unknown>;
}

export type EngineResponse = { type: 'response'; id: number; ok: true; result: unknown } | { type: 'response'; id: number; ok: false; error: WireError };

/** Worker <-> primary. A worker asks for the status when it starts: a broadcast sent before it listened is lost. */
export type WorkerEngineMessage =
  | ({ ch: typeof ENGINE_CH; type: 'request'; id: number } & EngineOp)
  | { ch: typeof ENGINE_CH; type: 'cancel'; id: number }
  | { ch: typeof ENGINE_CH; type: 'subscribe' }
  | ({ ch: typeof ENGINE_CH } & EngineResponse)
  | { ch: typeof ENGINE_CH; type: 'status'; status: EngineStatus; info?: EngineInfo; message?: string };

/** Primary <-> engine process. */
export type ProcessEngineMessage =
  | ({ type: 'request'; id: number } & EngineOp)
  | { type: 'cancel'; id: number }
  | EngineResponse
  | { type: 'ready'; info: EngineInfo }
  | { type: 'failed'; error: WireError };

export function isEngineMessage(msg: unknown): msg is WorkerEngineMessage {
  return typeof msg === 'object' && msg !== null && (msg as { ch?: unknown }).ch === ENGINE_CH;
}
