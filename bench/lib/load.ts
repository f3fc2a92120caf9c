// A closed-loop load generator: `concurrency` clients each send one request after another until
// the time budget is spent; the same generator drives our server and the baseline.
import { performance } from 'node:perf_hooks';
import { percentile } from './stats.js';

export interface LoadResult {
  concurrency: number;
  completed: number;
  failed: number;
  seconds: number;
  perSecond: number;
  p50ms: number;
  p99ms: number;
}

/** Runs `once` from `concurrency` loops for about `seconds` (at least `minPerClient` each). */
export async function runLoad(once: () => Promise<boolean>, opts: { concurrency: number; seconds: number; minPerClient?: number }): Promise<LoadResult> {
  const latencies: number[] = [];
  let failed = 0;
  const start = performance.now();
  const deadline = start + opts.seconds * 1000;
  const minPerClient = opts.minPerClient ?? 1;
  await Promise.all(
    Array.from({ length: opts.concurrency }, async () => {
      for (let n = 0; n < minPerClient || performance.now() < deadline; n++) {
        const t0 = performance.now();
        const ok = await once().catch(() => false);
        if (ok) latencies.push(performance.now() - t0);
        else failed++;
      }
    }),
  );
  const seconds = (performance.now() - start) / 1000;
  latencies.sort((a, b) => a - b);
  return {
    concurrency: opts.concurrency,
    completed: latencies.length,
    failed,
    seconds,
    perSecond: latencies.length / seconds,
    p50ms: percentile(latencies, 50),
    p99ms: percentile(latencies, 99),
  };
}
