// The determinism check's arithmetic and its words, without a model: the largest difference of two
// runs' log-probabilities, when exact kernels are too far from the stock ones to be served, and the
// start-up lines for each outcome.
import t from 'tap';
import { determinismReport, largestDifference, stockMismatch, STOCK_TOLERANCE_NATS } from '../../src/engine/determinism-check.js';
import type { DeterminismReport } from '../../src/engine/types.js';

const rows = (...xs: number[][]): Float32Array[] => xs.map((x) => Float32Array.from(x));
const report = (over: Partial<DeterminismReport>): DeterminismReport => ({
  kernels: 'exact',
  deterministic: true,
  maxDifference: 0,
  differences: { cached: 0, crowded: 0, headCached: 0, pastWindow: null },
  stockDifference: 0.01,
  fallback: null,
  ...over,
});

t.test('the largest difference: 0 for the same bits, the worst element otherwise, a JSON-safe figure where one side is not finite', async (t) => {
  t.equal(largestDifference(rows([-1.5, -2]), rows([-1.5, -2])), 0);
  t.equal(largestDifference(rows([-1.5, -2], [-3]), rows([-1.5, -2.25], [-2.5])), 0.5);
  t.equal(largestDifference(rows([-1]), rows([Number.NaN])), Number.MAX_VALUE);
  t.equal(largestDifference(rows([-Infinity]), rows([-Infinity])), 0, 'the same infinity is the same bits');
  t.equal(JSON.parse(JSON.stringify({ d: largestDifference(rows([0]), rows([Infinity])) })).d, Number.MAX_VALUE);
});

t.test('exact kernels are refused only beyond the tolerance, and never when not compared', async (t) => {
  t.equal(stockMismatch(report({ stockDifference: STOCK_TOLERANCE_NATS })), null);
  t.match(stockMismatch(report({ stockDifference: STOCK_TOLERANCE_NATS + 0.5 })), /by 1\.500 nats .*serves the stock kernels/);
  t.equal(stockMismatch(report({ kernels: 'fast', stockDifference: null })), null);
});

t.test('the start-up lines say what held, loudly when the promise does not', async (t) => {
  t.match(determinismReport(report({})), [/^determinism: exact kernels give the same scores bit for bit on this machine/]);
  const moved = determinismReport(
    report({ deterministic: false, maxDifference: 0.2, differences: { cached: 0, crowded: 0.2, headCached: 0.05, pastWindow: null } }),
  );
  t.match(moved, [
    /^WARNING: determinism does not hold on this machine: .* up to 0\.200 nats \(alone, cached 0, crowded 0\.200, after a cached head 0\.050 nats\)/,
  ]);
  const window = determinismReport(
    report({ deterministic: false, maxDifference: 0.3, differences: { cached: 0, crowded: 0, headCached: 0, pastWindow: 0.3 } }),
  );
  t.match(window, [/after a cached head 0, after a head of a prompt past the sliding window 0\.300 nats\)/], 'the window case is named where it ran');
  t.match(determinismReport(report({ kernels: 'fast', deterministic: false, maxDifference: 0.3, stockDifference: null })), [
    /^determinism: off \(--kernels fast\)/,
  ]);
  t.match(determinismReport(report({ kernels: 'fast', deterministic: false, maxDifference: 0.3, fallback: 'the exact kernels differ' })), [
    /^WARNING: the exact kernels differ/,
    /^determinism: off/,
  ]);
});
