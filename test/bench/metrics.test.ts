// The benches read engine counters from /metrics: a metric's total over its labels, or null when absent.
import t from 'tap';
import { metricTotal } from '../../bench/lib/metrics.js';

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
