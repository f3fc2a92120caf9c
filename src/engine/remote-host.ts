// A remote engine node (`arbitra engine --listen`) as the primary of an API node holds it: one
// control connection that proves the secret, learns the engine's facts, reads its counters for
// /metrics and relays the requests of workers that cannot connect themselves. While it is up the
// workers are told its address and connect to it directly; when it goes away they are told it is
// down (placement then leaves it out, and with no engine left decisions get 503 with Retry-After),
// and the connection is retried with backoff until it is back.
import { engineHost, type EngineHost } from './board.js';
import type { EngineState, EngineStatus } from './ipc.js';
import type { EngineSocket } from './socket.js';
import { connectEngineTcp, EngineRefusedError, parseEngineAddress } from './tcp.js';
import { EngineError, type EngineInfo, type EngineStats, type TextScoreRequest, type TextScoreResult } from './types.js';

const RETRY_BASE_MS = 250;
const RETRY_MAX_MS = 5_000;
/** An engine serving another model than ours is asked again this rarely: it needs an operator, not a hammer. */
const WRONG_MODEL_RETRY_MS = 30_000;
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
  log: (line: string) => void;
  onRelayed: () => void;
}

export function watchRemoteEngine(opts: RemoteHostOptions): EngineHost {
  const address = parseEngineAddress(opts.address);
  if ('path' in address) throw new Error(`${opts.address} is not a tcp:// or tls:// address`);
  const target = { host: address.host, port: address.port, secret: opts.secret, tls: address.tls ? { ca: opts.ca } : undefined };
  let status: EngineStatus = 'loading';
  let message: string | undefined = 'connecting to the engine';
  let info: EngineInfo | undefined;
  let conn: EngineSocket | null = null;
  let stopping = false;
  let failures = 0;
  let lastFailure: string | undefined;
  let reconnects = 0;
  let everReady = false;
  let resolveReady: (info: EngineInfo) => void = () => {};
  const ready = new Promise<EngineInfo>((resolve) => (resolveReady = resolve));

  const state = (): EngineState => ({ engine: opts.id, device: null, status });

  function setStatus(next: EngineStatus, why?: string): void {
    status = next;
    message = why;
    host.publish();
  }

  function retry(delay: number): void {
    if (stopping) return;
    setTimeout(connect, delay).unref();
  }

  function connect(): void {
    if (stopping) return;
    connectEngineTcp(target).then(
      ({ socket, info: facts }) => {
        if (stopping) return socket.close();
        const refusal = opts.accept(facts);
        if (refusal) {
          socket.close();
          if (refusal !== lastFailure) opts.log(`engine ${opts.id} at ${opts.address}: ${refusal}; not used`);
          lastFailure = refusal;
          setStatus('down', refusal);
          return retry(WRONG_MODEL_RETRY_MS);
        }
        conn = socket;
        info = facts;
        failures = 0;
        lastFailure = undefined;
        if (everReady) reconnects++;
        everReady = true;
        opts.log(`engine ${opts.id} at ${opts.address} connected (model ${facts.path.split('/').pop()}, backend ${facts.backend})`);
        void socket.done.then(() => {
          conn = null;
          if (stopping) return;
          opts.log(`engine ${opts.id} at ${opts.address} went away; retrying`);
          setStatus('down', 'the engine went away; retry shortly');
          retry(RETRY_BASE_MS);
        });
        setStatus('ready');
        resolveReady(facts);
      },
      (err: Error) => {
        failures++;
        const why = err instanceof EngineRefusedError ? err.message : `cannot reach the engine at ${opts.address} (${err.message})`;
        // Once per cause, not once per try.
        if (why !== lastFailure) opts.log(`engine ${opts.id} at ${opts.address}: ${why}; retrying`);
        lastFailure = why;
        setStatus(everReady ? 'down' : 'loading', why);
        retry(Math.min(RETRY_MAX_MS, RETRY_BASE_MS * 2 ** (failures - 1)));
      },
    );
  }

  function scoreText(payload: TextScoreRequest, signal?: AbortSignal): Promise<TextScoreResult> {
    if (!conn || status !== 'ready') return Promise.reject(new EngineError('unavailable', message ?? 'the engine is not connected; retry shortly'));
    return conn.score(payload, signal);
  }

  async function stats(): Promise<EngineStats | null> {
    if (!conn) return null;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), STATS_TIMEOUT_MS)));
    try {
      return await Promise.race([conn.stats().catch(() => null), late]);
    } finally {
      clearTimeout(timer);
    }
  }

  const host = engineHost({
    ready,
    state,
    details: () => ({ info, socket: opts.address, message }),
    scoreText,
    onRelayed: opts.onRelayed,
    restarts: () => reconnects,
    stats,
    async stop(drained) {
      stopping = true;
      await drained;
      conn?.close();
    },
  });

  connect();
  return host;
}
