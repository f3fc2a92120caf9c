// The cluster primary of `arbitra serve`: it owns the engine hosts (one model copy for everyone, or
// one per GPU with `--gpus`), forks the HTTP workers and keeps them alive, answers their metrics requests, and shuts it all
// down on SIGTERM/SIGINT. It serves no HTTP itself.
import cluster, { type Worker } from 'node:cluster';
import { storeOptions, type Config } from '../config.js';
import type { EngineHost } from '../engine/board.js';
import { startEngines } from './engines.js';
import { serveClusterMetrics } from '../metrics/cluster.js';
import { registerEngineMetrics } from '../metrics/engine.js';
import { startPurgeScheduler } from '../workers/purge.js';
import { createModelCatalog } from '../api/routes/models.js';
import { prepareStore, storeName, probePort, resolveModel, startupLine, StartupError } from './preflight.js';
import { runSelfTest } from './self-test.js';
import { CLUSTER_CH, CLUSTER_PORT_ENV, type ClusterMessage } from './protocol.js';

const RESTART_BASE_MS = 250;
const RESTART_MAX_MS = 30_000;
/** A worker that ran this long before dying starts the backoff afresh. */
const STABLE_MS = 60_000;
const SHUTDOWN_GRACE_MS = 10_000;

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
  const engineMetrics = registerEngineMetrics(() => hosts);
  const engines = startEngines(config, { id: modelId, path: modelPath }, log, engineMetrics.relayed);
  hosts = engines.hosts;
  // One purge schedule for the whole data dir, off the event loop in a piscina thread.
  const purge = startPurgeScheduler(config.store, config.limits.purgeIntervalSeconds * 1000, {
    storeOptions: storeOptions(config),
    log,
  });
  const live = new Set<Worker>();
  const stopMetrics = serveClusterMetrics({
    workers: () => [...live].filter((w) => w.isConnected()),
    on: (handler) => {
      cluster.on('message', handler);
      return () => cluster.off('message', handler);
    },
  });

  let stopping = false;
  let failures = 0;
  let started = false;
  let implementation = '';
  let rejectStart: (err: Error) => void = () => {};
  let listeningCount = 0;
  let resolveListening: () => void = () => {};
  const allListening = new Promise<void>((resolve, reject) => {
    resolveListening = resolve;
    rejectStart = reject;
  });

  function fork(): void {
    const worker = cluster.fork({ [CLUSTER_PORT_ENV]: String(port) });
    const bornAt = Date.now();
    live.add(worker);
    for (const host of hosts) host.attach(worker);
    worker.on('message', (msg: ClusterMessage) => {
      if (!msg || msg.ch !== CLUSTER_CH) return;
      if (msg.type === 'listening') {
        implementation = msg.http;
        if (!started && ++listeningCount === config.workers) resolveListening();
      } else if (msg.type === 'fatal' && !started) {
        rejectStart(new StartupError(msg.message));
      }
    });
    worker.on('exit', (code, signal) => {
      live.delete(worker);
      if (stopping) return;
      if (!started) {
        rejectStart(new StartupError(`an HTTP worker exited during start-up (${signal ?? `code ${code}`})`));
        return;
      }
      failures = Date.now() - bornAt > STABLE_MS ? 1 : failures + 1;
      const delay = Math.min(RESTART_MAX_MS, RESTART_BASE_MS * 2 ** (failures - 1));
      log(`HTTP worker ${worker.process.pid} exited (${signal ?? `code ${code}`}); restarting in ${delay} ms`);
      setTimeout(() => {
        if (!stopping) fork();
      }, delay).unref();
    });
  }

  async function stop(): Promise<void> {
    if (stopping) return;
    stopping = true;
    stopMetrics();
    const exits = [...live].map(
      (w) =>
        new Promise<void>((resolve) => {
          if (w.isDead()) return resolve();
          w.once('exit', () => resolve());
          const timer = setTimeout(() => w.process.kill('SIGKILL'), SHUTDOWN_GRACE_MS);
          timer.unref();
          if (w.isConnected()) w.send({ ch: CLUSTER_CH, type: 'shutdown' } satisfies ClusterMessage);
          else w.process.kill('SIGTERM');
        }),
    );
    // The engine answers the workers' last requests, and is never restarted from here on.
    const drained = Promise.all(exits);
    await Promise.all([...hosts.map((host) => host.stop(drained)), purge.stop()]);
  }

  for (let i = 0; i < config.workers; i++) fork();
  try {
    if (!engines.local) {
      // Remote engines come and go on their own; /health says 503 until one is connected.
      await allListening;
      started = true;
      log(startupLine({ host: config.host, port, model: modelId, backend: 'remote', workers: config.workers, http: implementation, engines: hosts.length }));
      log(`store: ${storeName(config)}`);
      return { port, stop };
    }
    const [infos] = await Promise.all([Promise.all(hosts.map((host) => host.ready)), allListening]);
    const info = infos[0]!;
    started = true;
    log(startupLine({ host: config.host, port, model: modelId, backend: info.backend, workers: config.workers, http: implementation, engines: hosts.length }));
    log(`store: ${storeName(config)}`);
    if (config.gpus && info.backend === 'cpu') {
      log(`this build has no GPU backend: --gpus ${config.gpus.join(',')} runs ${hosts.length} engines on the CPU, sharing its cores`);
    }
    // Every engine loads the same file with the same settings: one self-test speaks for all of them.
    if (config.selfTest) runSelfTest(hosts[0]!, info, modelId, log);
  } catch (err) {
    await stop();
    throw err;
  }
  return { port, stop };
}
