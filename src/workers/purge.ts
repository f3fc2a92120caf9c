// The timed purge. The scheduler (run by the primary) hands each run to a piscina worker thread
// that has its own LMDB handle, so purging never blocks the event loop; the purge itself works in
// small write transactions and removes only records whose expiry has passed.
import { Piscina } from 'piscina';
import { openStore, type PurgeResult, type Store, type StoreOptions } from '../store/index.js';

export interface PurgeTask {
  dataDir: string;
  storeOptions?: StoreOptions;
  /** The purge's idea of now; defaults to the worker's clock. */
  nowMs?: number;
}

// One handle per data dir for the life of the worker thread.
const stores = new Map<string, Promise<Store>>();

/** The piscina task: runs in the worker thread. */
export default async function purge(task: PurgeTask): Promise<PurgeResult> {
  let store = stores.get(task.dataDir);
  if (!store) {
    store = openStore(task.dataDir, task.storeOptions);
    stores.set(task.dataDir, store);
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
  dataDir: string,
  intervalMs: number,
  opts: { storeOptions?: StoreOptions; log?: (line: string) => void } = {},
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
    const run = pool.run({ dataDir, storeOptions: opts.storeOptions, nowMs }).finally(() => {
      running = null;
    });
    running = run;
    return run;
  };

  const timer = setInterval(() => {
    runNow().then(
      (r) => {
        if (r.retained + r.idempotency + r.verificationTokens > 0) {
          opts.log?.(`purge: removed ${r.retained} retained requests, ${r.idempotency} idempotency entries, ${r.verificationTokens} verification tokens`);
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
