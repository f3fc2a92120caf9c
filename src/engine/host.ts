// An engine host lives in the cluster primary, one per engine: it forks the engine process (one
// model copy, on its GPU when `--gpus` names one), tells workers whether it is up and where its
// socket is (they send their scoring requests there directly), and restarts it when it dies. A
// worker that cannot reach the socket sends its requests here instead; they are relayed, and counted.
import { fork, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { engineHost, type EngineHost } from './board.js';
import { ENGINE_CONFIG_ENV, type EngineState, type EngineStatus, type ProcessEngineMessage, type WireError } from './ipc.js';
import { removeEngineSocket } from './socket.js';
import { cancelledError, EngineError, type EngineInfo, type EngineOptions, type EngineStats, type TextScoreRequest, type TextScoreResult } from './types.js';

const RESTART_BASE_MS = 500;
const RESTART_MAX_MS = 30_000;
const STATS_TIMEOUT_MS = 1_000;

export interface EngineHostOptions {
  /** This engine's place in the service's list. */
  id: number;
  /** The GPU it may use (CUDA_VISIBLE_DEVICES of its process); null: every device the build sees. */
  device: number | null;
  modelPath: string;
  engine: Partial<EngineOptions>;
  log: (line: string) => void;
  /** Called for every request a worker relayed through the primary. */
  onRelayed: () => void;
}

interface Relay {
  reply: (msg: ProcessEngineMessage & { type: 'response' }) => void;
}

export function startEngineHost(opts: EngineHostOptions): EngineHost {
  const entry = path.join(path.dirname(fileURLToPath(import.meta.url)), 'process-main.js');
  const relays = new Map<number, Relay>();
  let nextId = 1;
  let child: ChildProcess | null = null;
  let status: EngineStatus = 'loading';
  let info: EngineInfo | undefined;
  let socket: string | undefined;
  let statusMessage: string | undefined;
  let stopping = false;
  let everReady = false;
  let failures = 0;
  let restarts = 0;
  let resolveReady: (info: EngineInfo) => void = () => {};
  let rejectReady: (err: Error) => void = () => {};
  const ready = new Promise<EngineInfo>((resolve, reject) => {
    resolveReady = resolve;
    rejectReady = reject;
  });
  ready.catch(() => {});

  function state(): EngineState {
    return { engine: opts.id, device: opts.device, status };
  }

  function setStatus(next: EngineStatus, message?: string): void {
    status = next;
    statusMessage = message;
    host.publish();
  }

  function failRelays(error: WireError): void {
    for (const [id, relay] of relays) relay.reply({ type: 'response', id, ok: false, error });
    relays.clear();
  }

  function request(op: ProcessEngineMessage & { type: 'request' }, relay: Relay): void {
    if (!child?.connected || status !== 'ready') {
      relay.reply({ type: 'response', id: op.id, ok: false, error: { code: 'unavailable', message: 'the engine is not running; retry shortly' } });
      return;
    }
    relays.set(op.id, relay);
    child.send(op);
  }

  function cancel(id: number): void {
    if (relays.has(id) && child?.connected) child.send({ type: 'cancel', id } satisfies ProcessEngineMessage);
  }

  function spawn(): void {
    const proc = fork(entry, [], {
      env: {
        ...process.env,
        [ENGINE_CONFIG_ENV]: JSON.stringify({ modelPath: opts.modelPath, options: opts.engine }),
        // The CUDA runtime numbers the devices it is shown from 0, so the engine's own settings need no device index.
        ...(opts.device === null ? {} : { CUDA_VISIBLE_DEVICES: String(opts.device) }),
      },
      serialization: 'advanced',
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    child = proc;
    const bornAt = Date.now();
    proc.on('message', (msg: ProcessEngineMessage) => {
      if (msg.type === 'ready') {
        info = msg.info;
        socket = msg.socket;
        everReady = true;
        setStatus('ready');
        resolveReady(msg.info);
      } else if (msg.type === 'failed') {
        if (!everReady) rejectReady(new Error(msg.error.message));
        statusMessage = msg.error.message;
      } else if (msg.type === 'response') {
        const relay = relays.get(msg.id);
        relays.delete(msg.id);
        relay?.reply(msg);
      }
    });
    proc.on('exit', (code, signal) => {
      child = null;
      if (socket) removeEngineSocket(socket);
      socket = undefined;
      failRelays({ code: 'unavailable', message: 'the engine process stopped while answering; retry shortly' });
      if (stopping) return;
      if (!everReady) {
        rejectReady(new Error(statusMessage ?? `the engine process exited during start-up (${signal ?? `code ${code}`})`));
        return;
      }
      restarts++;
      failures = Date.now() - bornAt > 60_000 ? 1 : failures + 1;
      const delay = Math.min(RESTART_MAX_MS, RESTART_BASE_MS * 2 ** (failures - 1));
      opts.log(`engine ${opts.id} process exited (${signal ?? `code ${code}`}); restarting in ${delay} ms`);
      setStatus('down', 'the engine is restarting');
      setTimeout(() => {
        if (stopping) return;
        setStatus('loading', 'the engine is restarting');
        spawn();
      }, delay).unref();
    });
  }

  function stats(): Promise<EngineStats | null> {
    return new Promise<EngineStats | null>((resolve) => {
      const id = nextId++;
      const timer = setTimeout(() => {
        relays.delete(id);
        resolve(null);
      }, STATS_TIMEOUT_MS);
      request(
        { type: 'request', id, op: 'stats' },
        {
          reply: (msg) => {
            clearTimeout(timer);
            resolve(msg.ok ? (msg.result as EngineStats) : null);
          },
        },
      );
    });
  }

  function scoreText(payload: TextScoreRequest, signal?: AbortSignal): Promise<TextScoreResult> {
    return new Promise<TextScoreResult>((resolve, reject) => {
      if (signal?.aborted) return reject(cancelledError());
      const id = nextId++;
      const onAbort = (): void => cancel(id);
      signal?.addEventListener('abort', onAbort, { once: true });
      request(
        { type: 'request', id, op: 'score', payload },
        {
          reply: (msg) => {
            signal?.removeEventListener('abort', onAbort);
            if (msg.ok) resolve(msg.result as TextScoreResult);
            else reject(new EngineError(msg.error.code, msg.error.message, msg.error.details ?? {}));
          },
        },
      );
    });
  }

  const host = engineHost({
    ready,
    state,
    details: () => ({ info, socket, message: statusMessage }),
    scoreText,
    onRelayed: opts.onRelayed,
    restarts: () => restarts,
    stats,
    async stop(drained) {
      stopping = true;
      await drained;
      const proc = child;
      if (!proc) return;
      await new Promise<void>((resolve) => {
        proc.once('exit', () => resolve());
        proc.disconnect();
        setTimeout(() => proc.kill('SIGKILL'), 10_000).unref();
      });
    },
  });

  spawn();
  return host;
}
