// A closed-loop load generator: `concurrency` clients each send one request after another until
// the time budget is spent; the same generator drives our server and the baseline. A cell is
// measured in rounds interleaved with the other servers' and pooled, so that a change of the
// machine's speed during the run hits every server alike.
import { performance } from 'node:perf_hooks';
import { percentile } from './stats.js';

/** One round against one server: the latency of every success, the failures, the wall time. */
export interface LoadRound {
  latencies: number[];
  failed: number;
  seconds: number;
}

export interface LoadResult {
  concurrency: number;
  completed: number;
  failed: number;
  seconds: number;
  perSecond: number;
  p50ms: number;
  p99ms: number;
  /** Completions per second of each round, in run order: how much the machine drifted. */
  roundRates: number[];
}

/** Runs `once` from `concurrency` loops for about `seconds` (at least `minPerClient` each), then waits for the requests in flight. */
export async function runRound(once: () => Promise<boolean>, opts: { concurrency: number; seconds: number; minPerClient?: number }): Promise<LoadRound> {
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
  return { latencies, failed, seconds: (performance.now() - start) / 1000 };
}

/** One server's rounds as one measurement: completions over the summed time, percentiles over every latency. */
export function poolRounds(concurrency: number, rounds: readonly LoadRound[]): LoadResult {
  const latencies = rounds.flatMap((r) => r.latencies).sort((a, b) => a - b);
  const seconds = rounds.reduce((sum, r) => sum + r.seconds, 0);
  return {
    concurrency,
    completed: latencies.length,
    failed: rounds.reduce((sum, r) => sum + r.failed, 0),
    seconds,
    perSecond: seconds > 0 ? latencies.length / seconds : NaN,
    p50ms: percentile(latencies, 50),
    p99ms: percentile(latencies, 99),
    roundRates: rounds.map((r) => (r.seconds > 0 ? r.latencies.length / r.seconds : NaN)),
  };
}

/** The order in which `n` servers take their turns in round `round`: each takes each place once every `n` rounds. */
export function turnOrder(n: number, round: number): number[] {
  return Array.from({ length: n }, (_, k) => (k + round) % n);
}

/** One closed-loop run measured on its own: a single round, pooled. */
export async function runLoad(once: () => Promise<boolean>, opts: { concurrency: number; seconds: number; minPerClient?: number }): Promise<LoadResult> {
  return poolRounds(opts.concurrency, [await runRound(once, opts)]);
}
