// The timed purge. The scheduler (run by the primary) hands each run to a piscina worker thread
// that has its own store handle, so purging never blocks the event loop; the purge itself removes
// only records whose expiry has passed, and with a shared database runs on one node at a time.
import { Piscina } from 'piscina';
import { openStore, type PurgeResult, type Store, type StoreOptions } from '../store/index.js';

export interface PurgeTask {
  /** The store's data dir or database URL, as openStore takes it. */
  location: string;
  /** Cloned into the worker thread, so without a log function. */
  storeOptions?: Omit<StoreOptions, 'log'>;
  /** The purge's idea of now; defaults to the worker's clock. */
  nowMs?: number;
}

// One handle per location for the life of the worker thread.
const stores = new Map<string, Promise<Store>>();

/** The piscina task: runs in the worker thread. */
export default async function purge(task: PurgeTask): Promise<PurgeResult> {
  let store = stores.get(task.location);
  if (!store) {
    store = openStore(task.location, task.storeOptions);
    stores.set(task.location, store);
    // A store that could not be opened (the database away) is opened again on the next run.
    store.catch(() => stores.delete(task.location));
  }
  return (await store).purgeExpired(task.nowMs);
}

export interface PurgeScheduler {
  /** Runs one purge now (off the main thread) and resolves with what it removed. */
  runNow(nowMs?: number): Promise<PurgeResult>;
  /** Stops the timer, waits for a running purge and ends the worker thread. */
  stop(): Promise<void>;
}

export function startPurgeScheduler(
  location: string,
  intervalMs: number,
  opts: { storeOptions?: Omit<StoreOptions, 'log'>; log?: (line: string) => void } = {},
): PurgeScheduler {
  const pool = new Piscina<PurgeTask, PurgeResult>({
    filename: new URL(import.meta.url).href,
    minThreads: 1,
    maxThreads: 1,
    // The worker thread must not keep the process alive on its own.
    idleTimeout: Math.max(1000, intervalMs * 2),
  });
  let running: Promise<PurgeResult> | null = null;

  const runNow = (nowMs?: number): Promise<PurgeResult> => {
    // Overlapping runs would only contend for the writer lock; the next tick picks up what is left.
    if (running) return running;
    const run = pool.run({ location, storeOptions: opts.storeOptions, nowMs }).finally(() => {
      running = null;
    });
    running = run;
    return run;
  };

  const timer = setInterval(() => {
    runNow().then(
      (r) => {
        if (r.retained + r.idempotency + r.verificationTokens + r.traces + r.addressWindows > 0) {
          opts.log?.(
            `purge: removed ${r.retained} retained requests, ${r.idempotency} idempotency entries, ${r.verificationTokens} verification tokens, ${r.traces} traces, ${r.addressWindows} ended per-address windows`,
          );
        }
      },
      (err: unknown) => opts.log?.(`purge failed: ${(err as Error).message}`),
    );
  }, intervalMs);
  timer.unref();

  return {
    runNow,
    async stop() {
      clearInterval(timer);
      await running?.catch(() => undefined);
      await pool.destroy();
    },
  };
}
