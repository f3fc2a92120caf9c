// One engine as the cluster primary presents it to the HTTP workers, whatever runs it (a local
// engine process or a remote engine node): its state, where it listens while ready, and why it is
// not, broadcast to every worker and sent to a worker that asks.
import type { Worker } from 'node:cluster';
import { ENGINE_CH, isEngineMessage, type EngineState, type WorkerEngineMessage } from './ipc.js';
import type { EngineInfo, EngineService, EngineStats } from './types.js';

export interface BoardSource {
  state(): EngineState;
  /** What the workers are told besides the state: the facts and where to connect while ready. */
  details(): { info?: EngineInfo; address?: string };
}

export interface EngineBoard {
  attach: (worker: Worker) => void;
  /** Tells every worker the current status. */
  publish: () => void;
}

export function engineBoard(source: BoardSource): EngineBoard {
  const workers = new Set<Worker>();

  function tell(worker: Worker): void {
    if (!worker.isConnected()) return;
    const state = source.state();
    const { info, address } = source.details();
    worker.send({ ch: ENGINE_CH, type: 'status', ...state, info, address: state.status === 'ready' ? address : undefined } satisfies WorkerEngineMessage);
  }

  return {
    publish() {
      for (const w of workers) tell(w);
    },
    attach(worker) {
      workers.add(worker);
      worker.on('exit', () => workers.delete(worker));
      worker.on('message', (msg: unknown) => {
        if (isEngineMessage(msg) && msg.type === 'subscribe') tell(worker);
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
  /** Times the engine came back after it died, was restarted or reconnected. */
  restarts(): number;
  /** Times it was found wedged (and, when local, killed to be restarted). */
  wedges(): number;
  /** The engine's counters, null when it cannot answer within a second. */
  stats(): Promise<EngineStats | null>;
  /** Stops restarting (or reconnecting to) the engine at once, then lets it go once `drained` settles (the workers' in-flight requests). */
  stop(drained?: Promise<unknown>): Promise<void>;
  /** Tells every worker the current status (after the host changed it). */
  publish(): void;
}

/** A host from what only it knows; the board and the engine-service face are the same for every kind. */
export function engineHost(parts: BoardSource & Omit<EngineHost, 'attach' | 'publish' | 'info' | 'state'> & { state(): EngineState }): EngineHost {
  const board = engineBoard(parts);
  return {
    ready: parts.ready,
    state: parts.state,
    restarts: parts.restarts,
    wedges: parts.wedges,
    stats: parts.stats,
    info: () => parts.ready,
    scoreText: parts.scoreText,
    attach: board.attach,
    publish: board.publish,
    stop: parts.stop,
  };
}
