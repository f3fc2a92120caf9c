// Metrics over IPC: a worker asked for /metrics asks the primary, which collects every HTTP
// worker's registry as JSON, adds its own (the engine host's gauges live there) and aggregates.
// Our own channel, rather than prom-client's cluster helper, so that only HTTP workers are asked
// and a slow or dying worker costs a bounded wait instead of failing the scrape.
import type { Worker } from 'node:cluster';
import { randomUUID } from 'node:crypto';
import { AggregatorRegistry, register } from 'prom-client';

const CH = 'metrics';
const WORKER_TIMEOUT_MS = 2_000;

type MetricsJson = Awaited<ReturnType<typeof register.getMetricsAsJSON>>;
type MetricsMessage =
  | { ch: typeof CH; type: 'collect'; id: string }
  | { ch: typeof CH; type: 'collect-reply'; id: string; text: string; contentType: string }
  | { ch: typeof CH; type: 'snapshot'; id: string }
  | { ch: typeof CH; type: 'snapshot-reply'; id: string; metrics: MetricsJson };

export interface MetricsText {
  contentType: string;
  text: string;
}

function isMetricsMessage(msg: unknown): msg is MetricsMessage {
  return typeof msg === 'object' && msg !== null && (msg as { ch?: unknown }).ch === CH;
}

/** This process's registry only (single-process mode). */
export async function localMetricsText(): Promise<MetricsText> {
  return { contentType: register.contentType, text: await register.metrics() };
}

/** Primary side: answers workers' collect requests. Returns a function that detaches it. */
export function serveClusterMetrics(opts: { workers: () => Worker[]; on: (handler: (worker: Worker, msg: unknown) => void) => () => void }): () => void {
  const pending = new Map<string, (metrics: MetricsJson) => void>();

  async function collect(): Promise<MetricsText> {
    const snapshots = await Promise.all(
      opts.workers().map(
        (worker) =>
          new Promise<MetricsJson | null>((resolve) => {
            const id = randomUUID();
            const timer = setTimeout(() => {
              pending.delete(id);
              resolve(null);
            }, WORKER_TIMEOUT_MS);
            pending.set(id, (metrics) => {
              clearTimeout(timer);
              pending.delete(id);
              resolve(metrics);
            });
            try {
              worker.send({ ch: CH, type: 'snapshot', id } satisfies MetricsMessage);
            } catch {
              clearTimeout(timer);
              pending.delete(id);
              resolve(null);
            }
          }),
      ),
    );
    const all = [...snapshots.filter((s): s is MetricsJson => s !== null), await register.getMetricsAsJSON()];
    const aggregated = AggregatorRegistry.aggregate(all);
    return { contentType: aggregated.contentType, text: await aggregated.metrics() };
  }

  return opts.on((worker, msg) => {
    if (!isMetricsMessage(msg)) return;
    if (msg.type === 'snapshot-reply') pending.get(msg.id)?.(msg.metrics);
    else if (msg.type === 'collect') {
      void collect().then(
        (out) => worker.isConnected() && worker.send({ ch: CH, type: 'collect-reply', id: msg.id, ...out } satisfies MetricsMessage),
        () =>
          worker.isConnected() &&
          worker.send({ ch: CH, type: 'collect-reply', id: msg.id, text: '', contentType: register.contentType } satisfies MetricsMessage),
      );
    }
  });
}

/** Worker side: answers snapshot requests and returns the function /metrics calls. */
export function workerMetrics(): () => Promise<MetricsText> {
  const waiting = new Map<string, (out: MetricsText) => void>();
  process.on('message', (msg: unknown) => {
    if (!isMetricsMessage(msg)) return;
    if (msg.type === 'snapshot') {
      void register.getMetricsAsJSON().then((metrics) => process.send?.({ ch: CH, type: 'snapshot-reply', id: msg.id, metrics } satisfies MetricsMessage));
    } else if (msg.type === 'collect-reply') {
      waiting.get(msg.id)?.({ contentType: msg.contentType, text: msg.text });
    }
  });
  return () =>
    new Promise<MetricsText>((resolve, reject) => {
      const id = randomUUID();
      const timer = setTimeout(() => {
        waiting.delete(id);
        reject(new Error('the primary did not answer the metrics request'));
      }, WORKER_TIMEOUT_MS * 2);
      waiting.set(id, (out) => {
        clearTimeout(timer);
        waiting.delete(id);
        resolve(out);
      });
      process.send!({ ch: CH, type: 'collect', id } satisfies MetricsMessage);
    });
}
