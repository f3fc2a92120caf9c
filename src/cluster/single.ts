// `--workers 0`: engine, store and HTTP server in one process. The server starts while the model
// loads, so /health can say "loading" instead of the port refusing connections.
import { createAppDeps, createApp } from '../app.js';
import { storeOptions, type Config } from '../config.js';
import { createLocalEngine, type LocalEngine } from '../engine/local.js';
import { EngineError, type DeterminismReport, type EngineService, type ServedPath } from '../engine/types.js';
import { engineReport } from '../engine/determinism-check.js';
import { describeFront, frontText } from '../http/front.js';
import { startHttpServer } from '../http/server.js';
import { storeMetrics } from '../metrics/store.js';
import { timedStore } from '../store/timed.js';
import { localMetricsText } from '../metrics/cluster.js';
import { startPurgeScheduler } from '../workers/purge.js';
import type { EngineStatus } from '../engine/ipc.js';
import { calibrationNotice } from '../decision/calibration-presets.js';
import { LAYOUT_VERSION } from '../decision/prompt.js';
import { runSelfTest } from './self-test.js';
import { prepareStore, storeName, openConfiguredStore, probePort, resolveModel, startupLine } from './preflight.js';

export interface Running {
  port: number;
  stop(): Promise<void>;
}

export async function runSingle(config: Config, log: (line: string) => void): Promise<Running> {
  await prepareStore(config);
  const port = await probePort(config.host, config.port);
  const modelPath = await resolveModel(config, log);
  const store = timedStore(await openConfiguredStore(config), storeMetrics());

  let status: EngineStatus = 'loading';
  let local: LocalEngine | null = null;
  let determinism: DeterminismReport | null = null;
  let kernelPath: ServedPath | null = null;
  const loading = createLocalEngine(modelPath, config.engine).then(
    async (engine) => {
      ({ determinism, kernelPath } = await engine.info());
      local = engine;
      status = 'ready';
      return engine;
    },
    (err: Error) => {
      status = 'down';
      throw err;
    },
  );
  const ready = (): LocalEngine => {
    if (!local) throw new EngineError('unavailable', status === 'loading' ? 'the model is still loading' : 'the model failed to load');
    return local;
  };
  const engine: EngineService = {
    info: async () => ready().info(),
    scoreText: async (request, signal) => ready().scoreText(request, signal),
  };

  let front = describeFront('node');
  // One process holds the engine here, so a wedged one cannot be restarted beside the server: it
  // is reported (/health 503), and a service manager that restarts on a failed health check heals it.
  const engineStatus = (): EngineStatus => (status === 'ready' && local?.stats().wedged ? 'wedged' : status);
  const deps = createAppDeps(config, {
    engine,
    engines: () => [{ engine: 0, device: null, status: engineStatus(), determinism, kernelPath }],
    store,
    workers: 0,
    httpFront: () => front,
    metricsText: localMetricsText,
    log,
  });
  const server = await startHttpServer({ host: config.host, port, handler: createApp(deps), prefer: config.http, log });
  front = describeFront(server.implementation);

  let info;
  try {
    info = await (await loading).info();
  } catch (err) {
    await server.close();
    await store.close();
    throw err;
  }
  const purge = startPurgeScheduler(config.store, config.limits.purgeIntervalSeconds * 1000, { storeOptions: storeOptions(config), log });
  log(startupLine({ host: config.host, port: server.port, model: deps.models.id, backend: info.backend, workers: 0, http: frontText(front) }));
  log(`store: ${storeName(config)}`);
  const calibration = calibrationNotice(config.calibration, info.sha256, LAYOUT_VERSION);
  if (calibration) log(calibration);
  engineReport(info).forEach((line) => log(line));
  if (config.selfTest) runSelfTest(engine, info, deps.models.id, log);
  return {
    port: server.port,
    async stop() {
      await server.close(config.shutdownGraceSeconds * 1000);
      await purge.stop();
      await local?.close();
      await store.close();
    },
  };
}
