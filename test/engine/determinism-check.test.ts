// The engine's check of its own promise at load, on the test model and the CPU backend: with the
// exact kernels the probe scores bit for bit the same alone, on its cached prefix, crowded, after a
// cached head and after an early head of a prompt that ran past the sliding window, and close to
// llama.cpp's stock kernels; with flash attention forced off the path is not covered and says so;
// with the fast kernels the check must come out false; and exact kernels that disagree with the
// stock ones are not served.
import t from 'tap';
import { engineReport, STOCK_TOLERANCE_NATS } from '../../src/engine/determinism-check.js';
import { keepsPromise } from '../../src/engine/exact-path.js';
import { createLocalEngine } from '../../src/engine/local.js';
import type { EngineOptions } from '../../src/engine/types.js';
import { TEST_MODEL } from '../helpers/models.js';

const SMALL: Partial<EngineOptions> = { threads: 2, kvCells: 4096, maxSequences: 8, checkDeterminism: true };

async function checked(options: Partial<EngineOptions>) {
  const engine = await createLocalEngine(TEST_MODEL, { ...SMALL, ...options });
  const info = await engine.info();
  return { engine, info, report: info.determinism! };
}

t.test('exact kernels: the same scores in every case, and close to the stock kernels', async (t) => {
  const { engine, info, report } = await checked({});
  t.teardown(() => engine.close());
  t.equal(report.kernels, 'exact');
  t.equal(info.slidingWindow, 512, "the test model's sliding-window layers see 512 positions");
  t.same(report.differences, { cached: 0, crowded: 0, headCached: 0, pastWindow: 0 }, 'bit for bit in every case, past the window too');
  t.equal(report.deterministic, true);
  t.equal(report.maxDifference, 0);
  t.ok(
    report.stockDifference !== null && report.stockDifference <= STOCK_TOLERANCE_NATS,
    `the stock kernels' probe is ${report.stockDifference} nats away, within rounding of the exact kernels'`,
  );
  t.equal(report.fallback, null);
  t.equal(info.kernels, 'exact', 'the engine serves the exact kernels');
  t.equal(info.flashAttentionAsked, 'on', 'exact kernels ask for flash attention on, not auto');
  t.equal(info.flashAttention, true, 'and the context resolved it on');
  t.same(info.kernelPath.uncovered, [], 'a path the promise covers');
  t.equal(keepsPromise(info.kernelPath, report.deterministic), true);
});

t.test('exact kernels with flash attention forced off: the path is reported as not covered, deterministic false with the reason', async (t) => {
  const { engine, info, report } = await checked({ flashAttention: 'off' });
  t.teardown(() => engine.close());
  t.equal(info.flashAttentionAsked, 'off');
  t.equal(info.flashAttention, false, 'resolved off, as asked');
  t.equal(info.kernels, 'exact', 'still the exact kernels, where they apply');
  t.match(info.kernelPath.uncovered, [/^flash attention is off/]);
  t.equal(keepsPromise(info.kernelPath, report.deterministic), false, `not promised, whatever the probe saw (${report.maxDifference} nats)`);
  t.match(engineReport(info), [
    /^path: exact kernels, flash attention off/,
    /^WARNING: the exact kernels run on a path their promise does not cover/,
    /^(determinism|WARNING)/,
  ]);
});

t.test('fast kernels: the check comes out false', async (t) => {
  const { engine, report } = await checked({ kernels: 'fast' });
  t.teardown(() => engine.close());
  t.equal(report.kernels, 'fast');
  t.equal(report.deterministic, false, `scores moved by up to ${report.maxDifference} nats (${JSON.stringify(report.differences)})`);
  t.ok(report.maxDifference > 0);
  t.equal(report.stockDifference, null, 'nothing to compare with: the engine runs the stock kernels');
});

t.test('exact kernels that disagree with the stock ones are not served: the engine reloads on the stock kernels and says why', async (t) => {
  const { engine, info, report } = await checked({ faultKernelsNats: 5 });
  t.teardown(() => engine.close());
  t.equal(info.kernels, 'fast', 'it serves the stock kernels');
  t.equal(report.kernels, 'fast');
  t.match(report.fallback, /differ from llama\.cpp's stock kernels' by 5\.\d+ nats .* serves the stock kernels/);
  const scored = await engine.engine.score(engine.engine.tokenize('The cat sat.', { addSpecial: true }), [
    { suffix: engine.engine.tokenize(' Yes'), candidates: Int32Array.from([1]) },
  ]);
  t.equal(scored.logprobs.length, 1, 'and answers');
});
