// The primary's HTTP workers: forked on the probed port, attached to every engine host, watched
// through start-up, restarted with back-off once the server runs, and asked to finish on shutdown.
import type { HttpImplementation } from '../api/route.js';
import cluster, { type Worker } from 'node:cluster';
import type { EngineHost } from '../engine/board.js';
import { StartupError } from './preflight.js';
import { CLUSTER_CH, CLUSTER_PORT_ENV, type ClusterMessage } from './protocol.js';

const RESTART_BASE_MS = 250;
const RESTART_MAX_MS = 30_000;
/** After its server's grace, a worker still closes its store and exits: this long before it is killed. */
const EXIT_MARGIN_MS = 5_000;

export interface HttpWorkers {
  /** Forks `count` workers. */
  start(): void;
  /** Every worker listens; rejects when one reports a fatal error or exits during start-up. */
  listening: Promise<void>;
  /** Start-up is over: from now on a worker that dies is restarted, not a reason to give up. */
  markStarted(): void;
  /** The HTTP implementation the workers reported (uws or node). */
  implementation(): HttpImplementation;
  /** The workers that can answer a message now. */
  connected(): Worker[];
  /** Stops restarting and asks every worker to finish its requests within `graceMs` (killing it a little after); settles when all have exited. */
  stop(): Promise<unknown>;
}

export function httpWorkers(options: { count: number; port: number; hosts: EngineHost[]; graceMs: number; log: (line: string) => void }): HttpWorkers {
  const { count, port, hosts, graceMs, log } = options;
  const live = new Set<Worker>();
  let stopping = false;
  let failures = 0;
  let started = false;
  let implementation: HttpImplementation = 'node';
  let rejectStart: (err: Error) => void = () => {};
  let listeningCount = 0;
  let resolveListening: () => void = () => {};
  const listening = new Promise<void>((resolve, reject) => {
    resolveListening = resolve;
    rejectStart = reject;
  });

  function fork(): void {
    const worker = cluster.fork({ [CLUSTER_PORT_ENV]: String(port) });
    let listened = false;
    live.add(worker);
    for (const host of hosts) host.attach(worker);
    worker.on('message', (msg: ClusterMessage) => {
      if (!msg || msg.ch !== CLUSTER_CH) return;
      if (msg.type === 'listening') {
        listened = true;
        implementation = msg.http;
        if (!started && ++listeningCount === count) resolveListening();
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
      // A worker that came up and then died was killed or crashed on something it met; only one
      // that dies before it listens is in a crash loop, and backs off.
      failures = listened ? 1 : failures + 1;
      const delay = Math.min(RESTART_MAX_MS, RESTART_BASE_MS * 2 ** (failures - 1));
      log(`HTTP worker ${worker.process.pid} exited (${signal ?? `code ${code}`}); restarting in ${delay} ms`);
      setTimeout(() => {
        if (!stopping) fork();
      }, delay).unref();
    });
  }

  return {
    start: () => {
      for (let i = 0; i < count; i++) fork();
    },
    listening,
    markStarted: () => {
      started = true;
    },
    implementation: () => implementation,
    connected: () => [...live].filter((w) => w.isConnected()),
    stop: () => {
      stopping = true;
      const exits = [...live].map(
        (w) =>
          new Promise<void>((resolve) => {
            if (w.isDead()) return resolve();
            w.once('exit', () => resolve());
            const timer = setTimeout(() => w.process.kill('SIGKILL'), graceMs + EXIT_MARGIN_MS);
            timer.unref();
            if (w.isConnected()) w.send({ ch: CLUSTER_CH, type: 'shutdown' } satisfies ClusterMessage);
            else w.process.kill('SIGTERM');
          }),
      );
      return Promise.all(exits);
    },
  };
}
