// Pooling interleaved rounds: the figures bench:api reports per server and cell.
import t from 'tap';
import { poolRounds, turnOrder } from '../../bench/lib/load.js';

t.test('poolRounds divides all completions by the summed time and takes percentiles over every latency', async (t) => {
  const pooled = poolRounds(8, [
    { latencies: [300, 100], failed: 1, seconds: 2 },
    { latencies: [200, 400, 500, 600], failed: 0, seconds: 4 },
  ]);
  t.equal(pooled.completed, 6);
  t.equal(pooled.failed, 1);
  t.equal(pooled.seconds, 6);
  t.equal(pooled.perSecond, 1);
  t.equal(pooled.p50ms, 300);
  t.equal(pooled.p99ms, 600);
  t.same(pooled.roundRates, [1, 1]);
  t.equal(pooled.concurrency, 8);
});

t.test('poolRounds of nothing is NaN, not a division by zero read as a rate', async (t) => {
  const pooled = poolRounds(1, []);
  t.equal(pooled.completed, 0);
  t.ok(Number.isNaN(pooled.perSecond) && Number.isNaN(pooled.p50ms));
});

t.test('turnOrder gives every server every place once per cycle of rounds', async (t) => {
  const orders = [0, 1, 2].map((r) => turnOrder(3, r));
  t.same(orders, [
    [0, 1, 2],
    [1, 2, 0],
    [2, 0, 1],
  ]);
  for (let place = 0; place < 3; place++) t.same(orders.map((o) => o[place]).sort(), [0, 1, 2]);
  t.same(turnOrder(3, 3), turnOrder(3, 0));
});
