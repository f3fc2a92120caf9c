// One engine as the cluster primary presents it to the HTTP workers, whatever runs it (a local
// engine process or a remote engine node): its status, broadcast to every worker and sent to a
// worker that asks, and the relay of scoring requests from workers that cannot reach the engine
// themselves. A worker's relayed requests are cancelled when it asks, or when it dies.
import type { Worker } from 'node:cluster';
import { ENGINE_CH, isEngineMessage, wireError, type EngineState, type WorkerEngineMessage } from './ipc.js';
import type { EngineInfo, EngineService, EngineStats } from './types.js';

export interface BoardSource {
  state(): EngineState;
  /** What the workers are told besides the state: the facts, where to connect while ready, why it is not. */
  details(): { info?: EngineInfo; socket?: string; message?: string };
  scoreText: EngineService['scoreText'];
  /** Called for every relayed request that reaches a ready engine. */
  onRelayed(): void;
}

export interface EngineBoard {
  attach(worker: Worker): void;
  /** Tells every worker the current status. */
  publish(): void;
}

export function engineBoard(source: BoardSource): EngineBoard {
  const workers = new Set<Worker>();

  function tell(worker: Worker): void {
    if (!worker.isConnected()) return;
    const state = source.state();
    const { info, socket, message } = source.details();
    worker.send({ ch: ENGINE_CH, type: 'status', ...state, info, socket: state.status === 'ready' ? socket : undefined, message } satisfies WorkerEngineMessage);
  }

  return {
    publish() {
      for (const w of workers) tell(w);
    },
    attach(worker) {
      workers.add(worker);
      const engine = source.state().engine;
      // This worker's relayed requests still running, by its ids, so its cancels (and its death) reach them.
      const outstanding = new Map<number, AbortController>();
      worker.on('exit', () => {
        workers.delete(worker);
        for (const aborter of outstanding.values()) aborter.abort();
      });
      worker.on('message', (msg: unknown) => {
        if (!isEngineMessage(msg)) return;
        if (msg.type === 'subscribe') return tell(worker);
        if ((msg.type !== 'cancel' && msg.type !== 'request') || msg.engine !== engine) return;
        if (msg.type === 'cancel') return outstanding.get(msg.id)?.abort();
        const aborter = new AbortController();
        outstanding.set(msg.id, aborter);
        // Counted when it reaches the engine: a refusal while the engine is down says nothing about the path.
        if (source.state().status === 'ready') source.onRelayed();
        const reply = (res: { ok: true; result: unknown } | { ok: false; error: ReturnType<typeof wireError> }): void => {
          outstanding.delete(msg.id);
          if (worker.isConnected()) worker.send({ ch: ENGINE_CH, type: 'response', id: msg.id, ...res } satisfies WorkerEngineMessage);
        };
        source.scoreText(msg.payload, aborter.signal).then(
          (result) => reply({ ok: true, result }),
          (err: unknown) => reply({ ok: false, error: wireError(err) }),
        );
      });
    },
  };
}

/**
 * One engine as the primary holds it: a local engine process (host.ts) or a remote engine node
 * (remote-host.ts). It is also an engine service for the primary itself (the load-time self-test).
 */
export interface EngineHost extends EngineService, Pick<EngineBoard, 'attach'> {
  /** Resolves with the model facts once the first load (or connection) succeeded; rejects if it failed. */
  ready: Promise<EngineInfo>;
  state(): EngineState;
  restarts(): number;
  /** The engine's counters, null when it cannot answer within a second. */
  stats(): Promise<EngineStats | null>;
  /** Stops restarting (or reconnecting to) the engine at once, then lets it go once `drained` settles (the workers' in-flight requests). */
  stop(drained?: Promise<unknown>): Promise<void>;
  /** Tells every worker the current status (after the host changed it). */
  publish(): void;
}

/** A host from what only it knows; the board and the engine-service face are the same for every kind. */
export function engineHost(parts: BoardSource & Pick<EngineHost, 'ready' | 'restarts' | 'stats' | 'stop'>): EngineHost {
  const board = engineBoard(parts);
  return {
    ready: parts.ready,
    state: parts.state,
    restarts: parts.restarts,
    stats: parts.stats,
    info: () => parts.ready,
    scoreText: parts.scoreText,
    attach: board.attach,
    publish: board.publish,
    stop: parts.stop,
  };
}
