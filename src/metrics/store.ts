// Time spent in the store per operation, in prom-client's default registry (aggregated over the
// workers like the HTTP metrics): with the decision route's own duration it gives the database's
// share of request latency, the figure to watch when several nodes share one PostgreSQL.
import { Histogram, register } from 'prom-client';

let shared: ((operation: string, seconds: number) => void) | null = null;

/** The observer timedStore() reports to, created once per process. */
export function storeMetrics(): (operation: string, seconds: number) => void {
  if (shared) return shared;
  const duration = new Histogram({
    name: 'arbitra_store_operation_seconds',
    help: 'Time from a store call to its result (LMDB or PostgreSQL), by operation ("keys.verify", "counters.admit", ...).',
    labelNames: ['operation'] as const,
    buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5],
    registers: [register],
  });
  shared = (operation, seconds) => duration.observe({ operation }, seconds);
  return shared;
}
