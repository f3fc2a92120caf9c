// An engine host lives in the cluster primary, one per engine: it forks the engine process (one
// model copy, on its GPU when `--gpus` names one), tells the workers whether it is up and where it
// listens (they send their scoring requests there directly), restarts it when it dies, and kills
// and restarts it when it wedges: a wedged engine heals as a killed one does.
import { fork, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { engineHost, type EngineHost } from './board.js';
import { ENGINE_CONFIG_ENV, type EngineState, type EngineStatus, type ProcessEngineMessage } from './ipc.js';
import { DEFAULT_ENGINE_OPTIONS } from './llama-engine.js';
import { openEngineChannel, type EngineChannel } from './rpc/client.js';
import { parseEngineAddress } from './rpc/address.js';
import { removeEngineSocket } from './rpc/socket-dir.js';
import { EngineError, type EngineInfo, type EngineOptions, type EngineStats, type TextScoreRequest, type TextScoreResult } from './types.js';
import { watchLiveness, type Watchdog } from './watchdog.js';

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
}

export function startEngineHost(opts: EngineHostOptions): EngineHost {
  const entry = path.join(path.dirname(fileURLToPath(import.meta.url)), 'process-main.js');
  const floorMs = (opts.engine.livenessSeconds ?? DEFAULT_ENGINE_OPTIONS.livenessSeconds) * 1000;
  let child: ChildProcess | null = null;
  let channel: EngineChannel | null = null;
  let watchdog: Watchdog | null = null;
  let status: EngineStatus = 'loading';
  let info: EngineInfo | undefined;
  let address: string | undefined;
  let statusMessage: string | undefined;
  let stopping = false;
  let everReady = false;
  let failures = 0;
  // Whether the engine process running now has finished a job of its callers since it loaded. One
  // that served and then died is restarted at once; one that dies before serving anything is in a
  // crash loop, and backs off.
  let jobsAtReady = 0;
  let served = false;
  let restarts = 0;
  let wedges = 0;
  let resolveReady: (info: EngineInfo) => void = () => {};
  let rejectReady: (err: Error) => void = () => {};
  const ready = new Promise<EngineInfo>((resolve, reject) => {
    resolveReady = resolve;
    rejectReady = reject;
  });
  ready.catch(() => {});

  function state(): EngineState {
    return {
      engine: opts.id,
      device: opts.device,
      status,
      ...(statusMessage && status !== 'ready' ? { message: statusMessage } : {}),
      determinism: info?.determinism ?? null,
      kernelPath: info?.kernelPath ?? null,
    };
  }

  function setStatus(next: EngineStatus, message?: string): void {
    status = next;
    statusMessage = message;
    host.publish();
  }

  function wedged(proc: ChildProcess, why: string): void {
    if (child !== proc || stopping) return;
    wedges++;
    opts.log(`engine ${opts.id} is wedged: ${why}; killing it to restart it`);
    setStatus('wedged', `the engine stopped making progress (${why}) and is being restarted`);
    proc.kill('SIGKILL');
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
    served = false;
    proc.on('message', (msg: ProcessEngineMessage) => {
      if (msg.type === 'ready') {
        info = msg.info;
        address = msg.address;
        channel = openEngineChannel(msg.address);
        jobsAtReady = msg.jobsDone;
        watchdog = watchLiveness({ stats: readCounters, floorMs, onWedged: (why) => wedged(proc, why) });
        everReady = true;
        setStatus('ready');
        resolveReady(msg.info);
      } else if (msg.type === 'failed') {
        if (!everReady) rejectReady(new Error(msg.error.message));
        statusMessage = msg.error.message;
      }
    });
    proc.on('exit', (code, signal) => {
      child = null;
      watchdog?.stop();
      watchdog = null;
      channel?.close();
      channel = null;
      if (address && 'path' in parseEngineAddress(address)) removeEngineSocket(address);
      address = undefined;
      if (stopping) return;
      if (!everReady) {
        rejectReady(new Error(statusMessage ?? `the engine process exited during start-up (${signal ?? `code ${code}`})`));
        return;
      }
      restarts++;
      failures = served ? 1 : failures + 1;
      const delay = Math.min(RESTART_MAX_MS, RESTART_BASE_MS * 2 ** (failures - 1));
      opts.log(`engine ${opts.id} process exited (${signal ?? `code ${code}`}); restarting in ${delay} ms`);
      setStatus('down', status === 'wedged' ? `${statusMessage}; restarting` : 'the engine is restarting');
      setTimeout(() => {
        if (stopping) return;
        setStatus('loading', 'the engine is restarting');
        spawn();
      }, delay).unref();
    });
  }

  function scoreText(payload: TextScoreRequest, signal?: AbortSignal): Promise<TextScoreResult> {
    if (!channel || status !== 'ready') return Promise.reject(new EngineError('unavailable', 'the engine is not running; retry shortly'));
    return channel.score(payload, signal);
  }

  /**
   * The running process's counters, read so that any look tells whether it has served: the
   * watchdog's every second, a /metrics scrape whenever it comes.
   */
  async function readCounters(timeoutMs: number): Promise<EngineStats> {
    const own = channel;
    const proc = child;
    if (!own) throw new EngineError('unavailable', 'the engine is not running');
    const s = await own.stats(timeoutMs);
    // An answer that arrives after this process died says nothing of its successor.
    if (child === proc) served ||= s.jobsDone > jobsAtReady;
    return s;
  }

  async function stats(): Promise<EngineStats | null> {
    return readCounters(STATS_TIMEOUT_MS).catch(() => null);
  }

  const host = engineHost({
    ready,
    state,
    details: () => ({ info, address }),
    scoreText,
    restarts: () => restarts,
    wedges: () => wedges,
    stats,
    async stop(drained) {
      stopping = true;
      watchdog?.stop();
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
