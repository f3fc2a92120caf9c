// Messages of the engine channel between the cluster primary, its HTTP workers and its engine
// processes. Only the engines' lifecycle travels here: an engine process says when it is ready and
// where it listens; the primary tells the workers each engine's state and address. Scoring itself
// never passes through the primary: every caller talks to the engine service (rpc/).
import { EngineError, type DeterminismReport, type EngineErrorCode, type EngineInfo, type ServedPath } from './types.js';

export const ENGINE_CH = 'engine';
/** Environment variable carrying the engine process's model path and options (JSON). */
export const ENGINE_CONFIG_ENV = 'ARBITRA_ENGINE_CONFIG';

/** `wedged`: it holds work and has finished no decode for longer than its liveness bound (liveness.ts). */
export type EngineStatus = 'loading' | 'ready' | 'down' | 'wedged';

export interface WireError {
  code: EngineErrorCode;
  message: string;
  details?: Record<string, unknown>;
}

export function wireError(err: unknown): WireError {
  if (err instanceof EngineError) return { code: err.code, message: err.message, details: err.details };
  return { code: 'internal', message: (err as Error).message };
}

/**
 * One engine of the service: `id` is its place in the list (0 when there is one), `device` the GPU
 * it was started on (`--gpus`), null when it was given every device the build sees; `message` why
 * it is not ready, when it is not.
 */
export interface EngineState {
  engine: number;
  device: number | null;
  status: EngineStatus;
  message?: string;
  /** What its load-time determinism check found; null until it has loaded, or when the check is off. */
  determinism: DeterminismReport | null;
  /** The path it resolved at load (exact-path.ts); null until it has loaded. */
  kernelPath: ServedPath | null;
}

/**
 * Worker <-> primary. A worker asks for the status when it starts: a broadcast sent before it
 * listened is lost. `address` is where the engine listens, set while it is ready.
 */
export type WorkerEngineMessage =
  | { ch: typeof ENGINE_CH; type: 'subscribe' }
  | ({ ch: typeof ENGINE_CH; type: 'status' } & EngineState & { info?: EngineInfo; address?: string });

/** The service's status over its engines: ready while any engine is. */
export function serviceStatus(engines: readonly EngineState[]): 'ready' | 'loading' | 'down' {
  if (engines.some((e) => e.status === 'ready')) return 'ready';
  return engines.some((e) => e.status === 'loading') ? 'loading' : 'down';
}

/** Engine process -> primary. `jobsDone` is the engine's count once loaded: its warm-up's jobs. */
export type ProcessEngineMessage = { type: 'ready'; info: EngineInfo; address: string; jobsDone: number } | { type: 'failed'; error: WireError };

export function isEngineMessage(msg: unknown): msg is WorkerEngineMessage {
  return typeof msg === 'object' && msg !== null && (msg as { ch?: unknown }).ch === ENGINE_CH;
}
