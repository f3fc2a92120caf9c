// A remote engine node (`arbitra engine --listen`) as the primary of an API node holds it: a
// channel that proves the secret, learns the engine's facts, reads its counters for /metrics and
// watches its liveness. While it is up the workers are told its address and call it directly; when
// it goes away, or says it is wedged, they are told so (placement then leaves it out, and with no
// engine left decisions get 503 with Retry-After), and it is asked again with backoff until it is
// back. The node itself exits when it wedges, for its service manager to restart it.
import { engineHost, type EngineHost } from './board.js';
import type { EngineState, EngineStatus } from './ipc.js';
import { DEFAULT_ENGINE_OPTIONS } from './llama-engine.js';
import { openEngineChannel } from './rpc/client.js';
import { parseEngineAddress } from './rpc/address.js';
import { EngineError, type EngineInfo, type EngineStats, type TextScoreRequest, type TextScoreResult } from './types.js';
import { watchLiveness, type Watchdog } from './watchdog.js';

const RETRY_BASE_MS = 250;
const RETRY_MAX_MS = 5_000;
/** An engine serving another model than ours is asked again this rarely: it needs an operator, not a hammer. */
const WRONG_MODEL_RETRY_MS = 30_000;
const INFO_TIMEOUT_MS = 10_000;
const STATS_TIMEOUT_MS = 1_000;

export interface RemoteHostOptions {
  id: number;
  /** tcp://host:port or tls://host:port */
  address: string;
  secret: string;
  /** A private certificate authority for tls:// engines. */
  ca?: Buffer;
  /**
   * Whether these facts are of the model this node serves, and the same file as every other
   * engine's; a reason when not.
   */
  accept(info: EngineInfo): string | null;
  /** EngineOptions.livenessSeconds of this node: how long an engine may not answer before it counts as wedged. */
  livenessSeconds?: number;
  log: (line: string) => void;
}

export function watchRemoteEngine(opts: RemoteHostOptions): EngineHost {
  if ('path' in parseEngineAddress(opts.address)) throw new Error(`${opts.address} is not a tcp:// or tls:// address`);
  const channel = openEngineChannel(opts.address, { secret: opts.secret, ca: opts.ca });
  const floorMs = (opts.livenessSeconds ?? DEFAULT_ENGINE_OPTIONS.livenessSeconds) * 1000;
  let status: EngineStatus = 'loading';
  let message: string | undefined = 'connecting to the engine';
  let info: EngineInfo | undefined;
  let watchdog: Watchdog | null = null;
  let stopping = false;
  let failures = 0;
  let lastFailure: string | undefined;
  let reconnects = 0;
  let wedges = 0;
  let everReady = false;
  let resolveReady: (info: EngineInfo) => void = () => {};
  const ready = new Promise<EngineInfo>((resolve) => (resolveReady = resolve));

  const state = (): EngineState => ({
    engine: opts.id,
    device: null,
    status,
    ...(message && status !== 'ready' ? { message } : {}),
    determinism: info?.determinism ?? null,
    kernelPath: info?.kernelPath ?? null,
  });

  function setStatus(next: EngineStatus, why?: string): void {
    status = next;
    message = why;
    host.publish();
  }

  function retry(delay: number): void {
    if (stopping) return;
    setTimeout(connect, delay).unref();
  }

  /** Once per cause, not once per try. */
  function failed(why: string, next: EngineStatus, delay: number): void {
    if (why !== lastFailure) opts.log(`engine ${opts.id} at ${opts.address}: ${why}; retrying`);
    lastFailure = why;
    setStatus(next, why);
    retry(delay);
  }

  function connect(): void {
    if (stopping) return;
    channel.info(INFO_TIMEOUT_MS).then(
      (facts) => {
        if (stopping) return;
        const refusal = opts.accept(facts);
        if (refusal) {
          if (refusal !== lastFailure) opts.log(`engine ${opts.id} at ${opts.address}: ${refusal}; not used`);
          lastFailure = refusal;
          setStatus('down', refusal);
          return retry(WRONG_MODEL_RETRY_MS);
        }
        info = facts;
        failures = 0;
        lastFailure = undefined;
        if (everReady) reconnects++;
        everReady = true;
        opts.log(`engine ${opts.id} at ${opts.address} connected (model ${facts.path.split('/').pop()}, backend ${facts.backend})`);
        watchdog = watchLiveness({
          stats: (ms) => channel.stats(ms),
          floorMs,
          onWedged: (why) => {
            wedges++;
            failed(`wedged: ${why}`, 'wedged', RETRY_BASE_MS);
          },
          onGone: () => failed('the engine went away', 'down', RETRY_BASE_MS),
        });
        setStatus('ready');
        resolveReady(facts);
      },
      (err: Error) => {
        failures++;
        const why =
          err instanceof EngineError && err.code === 'unavailable' && /refused|prove/.test(err.message)
            ? err.message
            : `cannot reach the engine at ${opts.address} (${err.message})`;
        failed(why, everReady ? 'down' : 'loading', Math.min(RETRY_MAX_MS, RETRY_BASE_MS * 2 ** (failures - 1)));
      },
    );
  }

  function scoreText(payload: TextScoreRequest, signal?: AbortSignal): Promise<TextScoreResult> {
    if (status !== 'ready') return Promise.reject(new EngineError('unavailable', message ?? 'the engine is not connected; retry shortly'));
    return channel.score(payload, signal);
  }

  async function stats(): Promise<EngineStats | null> {
    return status === 'ready' || status === 'wedged' ? channel.stats(STATS_TIMEOUT_MS).catch(() => null) : null;
  }

  const host = engineHost({
    ready,
    state,
    details: () => ({ info, address: opts.address }),
    scoreText,
    restarts: () => reconnects,
    wedges: () => wedges,
    stats,
    async stop(drained) {
      stopping = true;
      watchdog?.stop();
      await drained;
      channel.close();
    },
  });

  connect();
  return host;
}
