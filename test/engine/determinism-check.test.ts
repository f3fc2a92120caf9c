// The engine's check of its own promise at load, on the test model and the CPU backend: with the
// exact kernels the probe scores bit for bit the same alone, on its cached prefix, crowded, after a
// cached head and after an early head of a prompt that ran past the sliding window, and close to
// llama.cpp's stock kernels; with the fast kernels the check must come out false; and exact kernels
// that disagree with the stock ones are not served.
import t from 'tap';
import { STOCK_TOLERANCE_NATS } from '../../src/engine/determinism-check.js';
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
