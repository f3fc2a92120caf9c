// The benches read the server's /metrics: a metric's total over its labels (or null when absent), and
// histograms by label, their deltas between scrapes and quantiles estimated from their buckets.
import t from 'tap';
import { histogramDelta, histogramQuantile, histogramsDelta, histogramSum, metricTotal, parseSample, readHistograms } from '../../bench/lib/metrics.js';

const TEXT = [
  '# HELP arbitra_engine_queue_depth Scoring jobs waiting or running in the engine',
  '# TYPE arbitra_engine_queue_depth gauge',
  'arbitra_engine_queue_depth 3',
  'arbitra_engine_jobs_cancelled_total{reason="disconnect"} 2',
  'arbitra_engine_jobs_cancelled_total{reason="deadline"} 1',
  'arbitra_engine_jobs_cancelled_totally 100',
  '',
].join('\n');

t.test('sums a metric over its labels, by exact name', async (t) => {
  t.equal(metricTotal(TEXT, 'arbitra_engine_queue_depth'), 3);
  t.equal(metricTotal(TEXT, 'arbitra_engine_jobs_cancelled_total'), 3);
  t.equal(metricTotal(TEXT, 'arbitra_engine_restarts_total'), null);
});

// What prom-client writes for a histogram by operation (aggregated over workers, le first).
const scrape = (verify: number[], admit: number[], sums: [number, number]): string =>
  [
    '# TYPE arbitra_store_operation_seconds histogram',
    ...['0.001', '0.005', '0.01', '+Inf'].map((le, i) => `arbitra_store_operation_seconds_bucket{le="${le}",operation="keys.verify"} ${verify[i]}`),
    `arbitra_store_operation_seconds_sum{operation="keys.verify"} ${sums[0]}`,
    `arbitra_store_operation_seconds_count{operation="keys.verify"} ${verify[3]}`,
    ...['0.001', '0.005', '0.01', '+Inf'].map((le, i) => `arbitra_store_operation_seconds_bucket{le="${le}",operation="counters.admit"} ${admit[i]}`),
    `arbitra_store_operation_seconds_sum{operation="counters.admit"} ${sums[1]}`,
    `arbitra_store_operation_seconds_count{operation="counters.admit"} ${admit[3]}`,
    'arbitra_http_request_duration_seconds_bucket{le="1",route="/v1/systemone",method="POST"} 3',
    'arbitra_http_request_duration_seconds_bucket{le="+Inf",route="/v1/systemone",method="POST"} 4',
    'arbitra_http_request_duration_seconds_sum{route="/v1/systemone",method="POST"} 3.5',
    'arbitra_http_request_duration_seconds_count{route="/v1/systemone",method="POST"} 4',
    'arbitra_http_request_duration_seconds_bucket{le="1",route="/metrics",method="GET"} 9',
    'arbitra_http_request_duration_seconds_bucket{le="+Inf",route="/metrics",method="GET"} 9',
    'arbitra_http_request_duration_seconds_sum{route="/metrics",method="GET"} 0.1',
    'arbitra_http_request_duration_seconds_count{route="/metrics",method="GET"} 9',
    '',
  ].join('\n');

t.test('parseSample reads names, escaped label values and infinities', async (t) => {
  t.same(parseSample('m{a="x\\"y",le="+Inf"} 4'), { name: 'm', labels: { a: 'x"y', le: '+Inf' }, value: 4 });
  t.same(parseSample('m 1.5e-3'), { name: 'm', labels: {}, value: 0.0015 });
  t.equal(parseSample('# HELP m text'), null);
});

t.test('readHistograms groups by a label and keeps only the series asked for', async (t) => {
  const store = readHistograms(scrape([1, 3, 4, 4], [0, 0, 2, 2], [0.008, 0.015]), 'arbitra_store_operation_seconds', 'operation');
  t.same([...store.keys()].sort(), ['counters.admit', 'keys.verify']);
  t.same(store.get('keys.verify'), { bounds: [0.001, 0.005, 0.01, Infinity], counts: [1, 3, 4, 4], sum: 0.008, count: 4 });
  const http = readHistograms(scrape([0, 0, 0, 0], [0, 0, 0, 0], [0, 0]), 'arbitra_http_request_duration_seconds', undefined, { route: '/v1/systemone' });
  t.same(http.get(''), { bounds: [1, Infinity], counts: [3, 4], sum: 3.5, count: 4 }, 'the /metrics route is left out');
  t.equal(readHistograms('', 'arbitra_store_operation_seconds', 'operation').size, 0);
});

t.test('deltas between two scrapes, and sums of deltas', async (t) => {
  const before = readHistograms(scrape([1, 3, 4, 4], [0, 0, 2, 2], [0.008, 0.015]), 'arbitra_store_operation_seconds', 'operation');
  const after = readHistograms(scrape([2, 6, 9, 10], [0, 0, 2, 2], [0.05, 0.015]), 'arbitra_store_operation_seconds', 'operation');
  before.delete('counters.admit');
  const d = histogramsDelta(after, before);
  t.same(d.get('keys.verify')!.counts, [1, 3, 5, 6]);
  t.equal(d.get('keys.verify')!.count, 6);
  t.ok(Math.abs(d.get('keys.verify')!.sum - 0.042) < 1e-12);
  t.same(d.get('counters.admit')!.counts, [0, 0, 2, 2], 'a group absent before counts from zero');
  const twice = histogramSum(histogramSum(undefined, d.get('keys.verify')!), histogramDelta(d.get('keys.verify')!));
  t.same(twice.counts, [2, 6, 10, 12]);
  t.throws(() => histogramSum(d.get('keys.verify'), { bounds: [1, Infinity], counts: [0, 0], sum: 0, count: 0 }), /different buckets/);
});

t.test('histogramQuantile interpolates within the bucket, as PromQL does', async (t) => {
  const h = { bounds: [0.001, 0.005, 0.01, Infinity], counts: [2, 6, 10, 10], sum: 0, count: 10 };
  t.equal(histogramQuantile(h, 0.1), 0.0005, 'first bucket from 0');
  t.ok(Math.abs(histogramQuantile(h, 0.5) - 0.004) < 1e-12, 'rank 5 is 3/4 through (1 ms, 5 ms]');
  t.equal(histogramQuantile(h, 1), 0.01);
  const tail = { bounds: [0.001, Infinity], counts: [1, 100], sum: 0, count: 100 };
  t.equal(histogramQuantile(tail, 0.99), 0.001, 'in +Inf: the largest finite bound');
  t.ok(Number.isNaN(histogramQuantile({ bounds: [1, Infinity], counts: [0, 0], sum: 0, count: 0 }, 0.5)), 'nothing observed');
});
