// The cluster primary of `arbitra serve`: it owns the engine hosts (one model copy for everyone, or
// one per GPU with `--gpus`), forks the HTTP workers and keeps them alive, answers their metrics requests, and shuts it all
// down on SIGTERM/SIGINT. It serves no HTTP itself.
import cluster from 'node:cluster';
import { storeOptions, type Config } from '../config.js';
import type { EngineHost } from '../engine/board.js';
import { engineReport } from '../engine/determinism-check.js';
import { startEngines, type EngineSet } from './engines.js';
import { serveClusterMetrics } from '../metrics/cluster.js';
import { registerEngineMetrics } from '../metrics/engine.js';
import { startPurgeScheduler } from '../workers/purge.js';
import { createModelCatalog } from '../api/routes/models.js';
import { prepareStore, storeName, probePort, resolveModel, startupLine } from './preflight.js';
import { calibrationNotice } from '../decision/calibration-presets.js';
import { LAYOUT_VERSION } from '../decision/prompt.js';
import { runSelfTest } from './self-test.js';
import { httpWorkers, type HttpWorkers } from './http-workers.js';
import { describeFront, frontText } from '../http/front.js';

export interface PrimaryHandle {
  port: number;
  stop(): Promise<void>;
}

export async function runPrimary(config: Config, log: (line: string) => void): Promise<PrimaryHandle> {
  await prepareStore(config);
  const port = await probePort(config.host, config.port);
  // Remote engines hold the model; this node only names it.
  const modelPath = config.engines ? null : await resolveModel(config, log);
  const modelId = createModelCatalog(modelPath ?? config.model, config.modelAliases).id;

  let hosts: EngineHost[] = [];
  registerEngineMetrics(() => hosts);
  const engines = startEngines(config, { id: modelId, path: modelPath }, log);
  hosts = engines.hosts;
  // One purge schedule for the whole data dir, off the event loop in a piscina thread.
  const purge = startPurgeScheduler(config.store, config.limits.purgeIntervalSeconds * 1000, {
    storeOptions: storeOptions(config),
    log,
  });
  const workers = httpWorkers({ count: config.workers, port, hosts, graceMs: config.shutdownGraceSeconds * 1000, log });
  const stopMetrics = serveClusterMetrics({
    workers: () => workers.connected(),
    on: (handler) => {
      cluster.on('message', handler);
      return () => cluster.off('message', handler);
    },
  });

  let stopping = false;
  async function stop(): Promise<void> {
    if (stopping) return;
    stopping = true;
    stopMetrics();
    // The engine answers the workers' last requests, and is never restarted from here on.
    const drained = workers.stop();
    await Promise.all([...hosts.map((host) => host.stop(drained)), purge.stop()]);
  }

  workers.start();
  try {
    await startUp(config, { port, modelId, engines, workers, log });
  } catch (err) {
    await stop();
    throw err;
  }
  return { port, stop };
}

/** Waits for every worker to listen and, for local engines, for the model to load; then says so. */
async function startUp(
  config: Config,
  { port, modelId, engines, workers, log }: { port: number; modelId: string; engines: EngineSet; workers: HttpWorkers; log: (line: string) => void },
): Promise<void> {
  const { hosts } = engines;
  const announce = (backend: string): void => {
    log(
      startupLine({
        host: config.host,
        port,
        model: modelId,
        backend,
        workers: config.workers,
        http: frontText(describeFront(workers.implementation())),
        engines: hosts.length,
      }),
    );
    log(`store: ${storeName(config)}`);
  };
  if (!engines.local) {
    // Remote engines come and go on their own; /health says 503 until one is connected.
    await workers.listening;
    workers.markStarted();
    announce('remote');
    return;
  }
  const [infos] = await Promise.all([Promise.all(hosts.map((host) => host.ready)), workers.listening]);
  const info = infos[0]!;
  workers.markStarted();
  announce(info.backend);
  if (config.gpus && info.backend === 'cpu') {
    log(`this build has no GPU backend: --gpus ${config.gpus.join(',')} runs ${hosts.length} engines on the CPU, sharing its cores`);
  }
  const calibration = calibrationNotice(config.calibration, info.sha256, LAYOUT_VERSION);
  if (calibration) log(calibration);
  // Each engine checked its own device: a GPU may keep the promise where another does not.
  infos.forEach((engineInfo, n) => {
    engineReport(engineInfo).forEach((line) => log(hosts.length > 1 ? `engine ${n}: ${line}` : line));
  });
  // Every engine loads the same file with the same settings: one self-test speaks for all of them.
  if (config.selfTest) runSelfTest(hosts[0]!, info, modelId, log);
}
