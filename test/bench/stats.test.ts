// The summaries the load benches report: percentiles, a series' start/max/end, and recovery after a fault.
import t from 'tap';
import { fixed, latencySummary, mean, median, pct, percentile, recoveryAfter, seriesSummary, signed } from '../../bench/lib/stats.js';

t.test('mean and median, NaN for nothing; median sorts a copy and averages the middle pair', async (t) => {
  t.equal(mean([1, 2, 6]), 3);
  t.ok(Number.isNaN(mean([])));
  const xs = [9, 1, 5];
  t.equal(median(xs), 5);
  t.same(xs, [9, 1, 5], 'the input is left in its order');
  t.equal(median([4, 1, 3, 2]), 2.5);
  t.ok(Number.isNaN(median([])));
});

t.test('percentile is nearest-rank on an ascending list', async (t) => {
  const xs = Array.from({ length: 100 }, (_, i) => i + 1);
  t.equal(percentile(xs, 50), 50);
  t.equal(percentile(xs, 99), 99);
  t.equal(percentile(xs, 100), 100);
  t.equal(percentile(xs, 0), 1);
  t.equal(percentile([7], 99), 7);
  t.ok(Number.isNaN(percentile([], 50)));
});

t.test('latencySummary sorts before it reads', async (t) => {
  t.same(latencySummary([30, 10, 20]), { count: 3, p50: 20, p99: 30, max: 30 });
  const empty = latencySummary([]);
  t.equal(empty.count, 0);
  t.ok(Number.isNaN(empty.p50) && Number.isNaN(empty.max));
});

t.test('seriesSummary keeps time order for start and end', async (t) => {
  t.same(seriesSummary([5, 9, 3]), { start: 5, max: 9, end: 3 });
  t.ok(Number.isNaN(seriesSummary([]).max));
});

t.test('recovery counts only the probes sent after the last failure', async (t) => {
  const probe = (sentAt: number, doneAt: number, ok: boolean) => ({ sentAt, doneAt, ok });
  // Fails, then a success that is not for good (a later-sent probe fails), then steady successes.
  const probes = [probe(100, 110, false), probe(200, 900, true), probe(300, 310, false), probe(400, 1400, true), probe(500, 1200, true)];
  t.same(recoveryAfter(0, probes), { ms: 1200, probes: 5, failed: 2 });
  t.same(recoveryAfter(0, [probe(100, 150, true)]), { ms: 150, probes: 1, failed: 0 }, 'no failure: the first answer');
  t.same(recoveryAfter(0, [probe(100, 150, true), probe(200, 210, false)]), { ms: null, probes: 2, failed: 1 }, 'still failing at the end');
  t.same(recoveryAfter(0, []), { ms: null, probes: 0, failed: 0 });
  t.equal(recoveryAfter(500, [probe(100, 400, true)]).ms, 0, 'never negative');
});

t.test('table cells: fixed digits, shares and signed differences, a dash for nothing', async (t) => {
  t.equal(fixed(0.12345), '0.123');
  t.equal(fixed(2.5, 1), '2.5');
  t.equal(fixed(null), '–');
  t.equal(pct(0.1234), '12.3%');
  t.equal(pct(NaN), '–');
  t.equal(signed(0.0123), '+0.012');
  t.equal(signed(-0.064), '−0.064', 'a minus sign, not a hyphen');
});
