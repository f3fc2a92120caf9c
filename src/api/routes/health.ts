// GET /health: liveness plus what an operator checks first. 503 while no engine has its model
// loaded, so load balancers hold traffic back until decisions can be served; each engine's own
// state is listed, so one GPU down behind a serving node is seen too.
//
// A store that cannot be reached is 503 too: every decision authenticates its key and takes its
// admission in the store, so a node without it cannot serve a single decision, and a load balancer
// should send the traffic to a node that still can (one cut off from the database alone). When the
// database is down for every node, all of them answer 503 here and each request gets our own 503
// with Retry-After; the node takes traffic back by itself once the store answers again.
import { API_VERSION } from '../render.js';
import type { CalibrationMode, CalibrationRecord } from '../../decision/calibration.js';
import { presetCalibration } from '../../decision/calibration-presets.js';
import { LAYOUT_VERSION } from '../../decision/prompt.js';
import type { ServedQuality } from '../../decision/schema/quality.js';
import { servedQuality } from '../../decision/served-quality.js';
import { serviceStatus, type EngineState } from '../../engine/ipc.js';
import { isCovered, keepsPromise } from '../../engine/exact-path.js';
import type { EngineService } from '../../engine/types.js';
import type { Route } from '../route.js';
import { HealthResponse, type HttpFront } from '../schemas/health.js';
import type { Store } from '../../store/types.js';

/** How long one answer of the store (its ping, the newest fit) is reused, so a flood of /health costs the database little. */
const REUSE_MS = 1_000;
/** /health answers within this even when the store does not (the store's own bounds are longer). */
export const HEALTH_WAIT_MS = 2_000;

/** What /health says under --calibration fitted when the newest fit could not be read in time. */
const FIT_UNREAD = 'the newest fit was not read in time: the engine or the store did not answer';

export interface HealthRouteDeps {
  modelId: string;
  engines: () => EngineState[];
  /** Asked for the served model file's checksum, once an engine is ready. */
  engine: Pick<EngineService, 'info'>;
  /** Which calibration answers are served with (--calibration), for model.quality. */
  calibration: CalibrationMode;
  store: Pick<Store, 'ping' | 'calibrations'>;
  workers: number;
  httpFront: () => HttpFront;
  /** Date.now() at process start. */
  startedAt: number;
}

/**
 * An answer asked at most once per REUSE_MS and never while the last ask is still out (a hung
 * database must not fill the pool with pings), and waited for at most HEALTH_WAIT_MS: `failed`
 * after that, or when the ask fails.
 */
function reused<T>(ask: () => Promise<T>, failed: T): () => Promise<T> {
  let last: { at: number; answer: Promise<T> } | null = null;
  let asking = false;
  return () => {
    if (last && (asking || Date.now() - last.at < REUSE_MS)) return last.answer;
    asking = true;
    const asked = ask()
      .catch(() => failed)
      .finally(() => (asking = false));
    let timer: NodeJS.Timeout | undefined;
    const answer = Promise.race([asked, new Promise<T>((resolve) => (timer = setTimeout(() => resolve(failed), HEALTH_WAIT_MS)))]).finally(() =>
      clearTimeout(timer),
    );
    last = { at: Date.now(), answer };
    return answer;
  };
}

/** The store's reachability. */
function storeProbe(store: Pick<Store, 'ping'>): () => Promise<boolean> {
  return reused(() => store.ping().then(() => true), false);
}

/**
 * model.quality: the figures of what is served, for the model file an engine has loaded (null
 * while none has); under --calibration fitted, the newest fit is read from the store.
 */
function qualityProbe(deps: Pick<HealthRouteDeps, 'engine' | 'calibration' | 'store'>): () => Promise<ServedQuality> {
  return reused<ServedQuality>(
    async () => {
      const info = await deps.engine.info().catch(() => null);
      if (!info) return null;
      const preset = presetCalibration(info.sha256, LAYOUT_VERSION);
      const fitted = deps.calibration === 'fitted' ? await deps.store.calibrations.latest<CalibrationRecord>(info.sha256, LAYOUT_VERSION) : null;
      return servedQuality(deps.calibration, { preset, fitted });
    },
    deps.calibration === 'fitted' ? { unavailable: FIT_UNREAD } : null,
  );
}

/**
 * Where an engine listens, in the words a message may use: a tcp://, tls:// or unix: address, a
 * socket path, an IPv4 or bracketed IPv6 address with or without its port.
 */
const ADDRESS = /\b(?:tcp|tls):\/\/\S+|\bunix:\S+|(?<![\w.])\/[\w.-]+(?:\/[\w.-]+)+|\[[0-9a-f:.]+\](?::\d+)?|\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b/gi;

/**
 * Why an engine is not ready, as anyone may read it: /health answers without a key, and where the
 * engines listen is the operator's to know (the log names them).
 */
export function publicMessage(message: string): string {
  return message.replace(ADDRESS, '(address in the log)');
}

/** An engine as /health shows it: its state and what its load-time determinism check found. */
function engineHealth({ determinism, kernelPath: path, message, ...state }: EngineState) {
  return {
    ...state,
    ...(message === undefined ? {} : { message: publicMessage(message) }),
    kernels: determinism?.kernels ?? path?.kernels ?? null,
    deterministic: keepsPromise(path, determinism?.deterministic ?? null),
    max_difference: determinism?.maxDifference ?? null,
    ...(determinism?.fallback ? { kernels_note: determinism.fallback } : {}),
    path: path && {
      flash_attention: path.flashAttention,
      kv_gather: path.kvGather,
      cpu_variant: path.cpuVariant,
      cpu_variants: path.cpuVariants,
      cpu_products: path.cpuProducts,
      covered: isCovered(path),
      uncovered: path.uncovered,
    },
  };
}

export function healthRoutes(deps: HealthRouteDeps): Route[] {
  const storeReachable = storeProbe(deps.store);
  const quality = qualityProbe(deps);
  return [
    {
      method: 'GET',
      path: '/health',
      summary: 'Service status, API version and whether the model is loaded',
      auth: 'none',
      schemas: { response: HealthResponse },
      async handler() {
        const engines = deps.engines();
        const engine = serviceStatus(engines);
        const [store, served] = await Promise.all([storeReachable(), engine === 'ready' ? quality() : null]);
        const status = !store ? 'down' : engine === 'ready' ? 'ok' : engine;
        return {
          status: status === 'ok' ? 200 : 503,
          headers: status === 'ok' ? undefined : { 'retry-after': '2', 'retry-after-ms': '2000' },
          body: {
            status,
            api_version: API_VERSION,
            model: { id: deps.modelId, loaded: engine === 'ready', quality: served },
            workers: deps.workers,
            uptime_s: Math.floor((Date.now() - deps.startedAt) / 1000),
            http: deps.httpFront().implementation,
            http_front: deps.httpFront(),
            pid: process.pid,
            store: { status: store ? 'ok' : 'unreachable' },
            engines: engines.map(engineHealth),
          },
        };
      },
    },
  ];
}
