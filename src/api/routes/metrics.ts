// GET /metrics: Prometheus text exposition, aggregated over every worker by the cluster primary.
import type { Route } from '../route.js';

export interface MetricsRouteDeps {
  /** The exposition text and its content type (see src/metrics/cluster.ts). */
  metricsText: () => Promise<{ contentType: string; text: string }>;
}

export function metricsRoutes(deps: MetricsRouteDeps): Route[] {
  return [
    {
      method: 'GET',
      path: '/metrics',
      summary: 'Prometheus metrics of all workers and the engine',
      auth: 'none',
      responseType: 'text/plain',
      async handler() {
        const { contentType, text } = await deps.metricsText();
        return { status: 200, headers: { 'content-type': contentType }, body: text };
      },
    },
  ];
}
