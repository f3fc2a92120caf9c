// One HTTP worker of `arbitra serve`: the engine over its socket, its own LMDB handle, the full route set.
import { createApp, createAppDeps } from '../app.js';
import type { Config } from '../config.js';
import { connectEngine } from '../engine/client.js';
import { engineClientOptions } from './engines.js';
import { openConfiguredStore } from './preflight.js';
import { describeFront } from '../http/front.js';
import { startHttpServer } from '../http/server.js';
import { storeMetrics } from '../metrics/store.js';
import { timedStore } from '../store/timed.js';
import { workerMetrics } from '../metrics/cluster.js';
import { CLUSTER_CH, CLUSTER_PORT_ENV, type ClusterMessage } from './protocol.js';

export async function runWorker(config: Config, log: (line: string) => void): Promise<void> {
  const send = (msg: ClusterMessage): void => {
    process.send?.(msg);
  };
  try {
    const port = Number(process.env[CLUSTER_PORT_ENV] ?? config.port);
    const engine = connectEngine(engineClientOptions(config), log);
    const store = timedStore(await openConfiguredStore(config), storeMetrics());
    let front = describeFront('node');
    const deps = createAppDeps(config, {
      engine,
      engines: () => engine.engines(),
      store,
      workers: config.workers,
      httpFront: () => front,
      metricsText: workerMetrics(),
      log,
    });
    const server = await startHttpServer({ host: config.host, port, handler: createApp(deps), prefer: config.http, log });
    front = describeFront(server.implementation);
    process.on('message', (msg: ClusterMessage) => {
      if (msg?.ch !== CLUSTER_CH || msg.type !== 'shutdown') return;
      void server
        .close(config.shutdownGraceSeconds * 1000)
        .then(() => store.close())
        .finally(() => process.exit(0));
    });
    // The primary decides when to stop; a terminal's Ctrl-C reaches the whole group at once.
    process.on('SIGINT', () => {});
    process.on('SIGTERM', () => {});
    send({ ch: CLUSTER_CH, type: 'listening', http: server.implementation, port: server.port });
  } catch (err) {
    send({ ch: CLUSTER_CH, type: 'fatal', message: (err as Error).message.split('\n')[0]! });
    process.exitCode = 1;
    setTimeout(() => process.exit(1), 100);
  }
}
