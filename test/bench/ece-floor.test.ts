// The ECE floor bench:quality prints beside ECE: what a perfectly calibrated forecaster would show
// on as many forecasts, so that a reader can tell calibration error from the set's sampling noise.
import t from 'tap';
import { eceFloor } from '../../bench/lib/ece-floor.js';

const coinTosses = (n: number) => Array.from({ length: n }, () => ({ p: [0.5, 0.5] }));

t.test('the floor shrinks as the set grows, and is the same on every run', async (t) => {
  const small = eceFloor(coinTosses(50));
  const large = eceFloor(coinTosses(5000));
  // A fair coin's hit rate over n tosses is off by about 0.4/√n on average: 0.056 at 50, 0.0056 at 5000.
  t.ok(small > 0.03 && small < 0.09, `50 forecasts: ${small}`);
  t.ok(large < 0.01, `5000 forecasts: ${large}`);
  t.equal(eceFloor(coinTosses(50)), small, 'deterministic');
  t.ok(Number.isNaN(eceFloor([])));
});

t.test('certain forecasts are always right about themselves: no floor at all', async (t) => {
  t.equal(eceFloor(Array.from({ length: 30 }, (_, i) => ({ p: i % 2 ? [1, 0, 0] : [0, 0, 1] }))), 0);
});
