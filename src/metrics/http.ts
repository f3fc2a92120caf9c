// Per-request HTTP metrics. They live in prom-client's default registry so that one scrape, after
// aggregation over the workers (see cluster.ts), shows every process's series.
import { Counter, Histogram, register } from 'prom-client';

/**
 * The methods that keep a label of their own. A client may send any token as its method (uWS passes
 * it through, and node:http takes some thirty), and every distinct label is a new series in each
 * worker and in the primary's aggregate: an anonymous caller could grow /metrics without bound. So
 * every other method is counted as `other`; the routes' own methods are all in this set.
 */
const KNOWN_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

export function methodLabel(method: string): string {
  return KNOWN_METHODS.has(method) ? method : 'other';
}

export interface HttpMetrics {
  observe(route: string, method: string, status: number, seconds: number): void;
}

let shared: HttpMetrics | null = null;

/** The process's HTTP metrics, created once (prom-client refuses a second registration). */
export function httpMetrics(): HttpMetrics {
  if (shared) return shared;
  const requests = new Counter({
    name: 'arbitra_http_requests_total',
    help: 'HTTP requests answered, by route pattern, method and status.',
    labelNames: ['route', 'method', 'status'] as const,
    registers: [register],
  });
  const duration = new Histogram({
    name: 'arbitra_http_request_duration_seconds',
    help: 'Time from the first byte of a request to its response, by route pattern and method.',
    labelNames: ['route', 'method'] as const,
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [register],
  });
  shared = {
    observe(route, rawMethod, status, seconds) {
      const method = methodLabel(rawMethod);
      requests.inc({ route, method, status: String(status) });
      duration.observe({ route, method }, seconds);
    },
  };
  return shared;
}
